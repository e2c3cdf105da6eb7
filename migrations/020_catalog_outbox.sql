-- wf schema, version 20: the catalog's outbox, for a catalog in a database
-- of its own (catalog.database_url).
--
-- With one database the catalog's writes and their events (catalog.created,
-- asset.updated, …) commit in one transaction. With two they cannot: the
-- catalog write records its events in catalog.outbox in its own
-- transaction, and a relay copies them into tasks.events afterwards (at
-- once, and again from a sweep for what a crash left behind), then deletes
-- them here. tasks.relayed_events remembers the ids it copied, written in
-- the transaction that writes the event, so a copy repeated after a crash
-- (between the queue's commit and the outbox's delete) writes nothing: every
-- event reaches the queue once, with the id it was given in the catalog's
-- transaction. A relay forgets the ids once their outbox rows are gone (and
-- any a crash left, after a week).
-- wf:database catalog
CREATE TABLE catalog.outbox (
    event_id    uuid         PRIMARY KEY,
    event_type  varchar(255) NOT NULL,
    scope       varchar(50)  NOT NULL,
    schema_name varchar(255) NOT NULL,
    payload     jsonb        NOT NULL,
    dedup_key   varchar(512),
    created_at  timestamptz  NOT NULL DEFAULT now()
);

-- wf:database queue
CREATE TABLE tasks.relayed_events (
    event_id   uuid        PRIMARY KEY,
    relayed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX relayed_events_relayed_at ON tasks.relayed_events (relayed_at);
