-- wf schema, version 13: the Google Cloud side of the catalog application.
--
-- catalog.gcp_resources records, per catalog, the cloud resources
-- gcp_provision created or adopted for it: its bucket, the Pub/Sub topic
-- the bucket's notifications go to, the push subscription that delivers
-- them to wf's /hooks/gcs, and the notification configuration's id. It is
-- how a storage notification finds its tenant: a push for bucket X touches
-- only the catalog recorded as X's owner (bucket is unique). There is no
-- foreign key to catalog.catalogs on purpose: gcp_catalog_cleanup reads the
-- row after the catalog is deleted, removes the resources, then the row.
-- wf:database catalog
CREATE TABLE catalog.gcp_resources (
    catalog_id      varchar(63) PRIMARY KEY,
    schema_name     varchar(63) NOT NULL,
    project         text        NOT NULL,
    bucket          text        NOT NULL UNIQUE,
    topic           text        NOT NULL,  -- projects/P/topics/T
    subscription    text        NOT NULL,  -- projects/P/subscriptions/S
    notification_id text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- wf:database queue
-- tasks.inbox_messages remembers the messages pushed to wf (Pub/Sub push
-- deliveries, by message id) whose event was written to the outbox, so that
-- a redelivery writes nothing: the row and the event are written in one
-- transaction. Unpartitioned and small; the leader's maintenance deletes
-- rows older than Pub/Sub's longest retention (31 days).
CREATE TABLE tasks.inbox_messages (
    source      varchar(32) NOT NULL,   -- gcs: a Cloud Storage notification
    message_id  text        NOT NULL,
    event_id    uuid        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, message_id)
);
CREATE INDEX inbox_messages_received_at ON tasks.inbox_messages (received_at);
