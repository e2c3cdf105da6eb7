-- wf schema, version 2: fired schedule ticks, webhook subscribers, and the
-- indexes retention needs to keep the dedup tables consistent.

-- wf:database queue
-- tasks.schedule_ticks records every tick a Schedule fired, written in the
-- same transaction as the tick's task. Its primary key is what makes a tick
-- fire once across leader changes: a task's dedup key is released when the
-- task finishes, a recorded tick never is. The leader also reads the latest
-- tick per schedule to apply the missed-tick policy when it takes over.
CREATE TABLE tasks.schedule_ticks (
    schedule_name varchar(255) NOT NULL,
    tick          timestamptz  NOT NULL,
    task_id       uuid,
    fired_at      timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule_name, tick)
);

-- tasks.webhook_subscribers are the receivers of catalog lifecycle events
-- (the event_dispatch and webhook_delivery task types). The secret signs
-- every delivery (HMAC-SHA256), so it must be readable by wf: it is
-- protected by the database's access control, like the rest of wf's data,
-- and never printed back by wf.
CREATE TABLE tasks.webhook_subscribers (
    subscriber_id uuid         PRIMARY KEY,
    url           text         NOT NULL CHECK (url ~ '^https?://'),
    secret        text         NOT NULL CHECK (length(secret) > 0),
    event_types   text[]       NOT NULL CHECK (cardinality(event_types) > 0),
    created_at    timestamptz  NOT NULL DEFAULT now()
);

-- When retention drops a partition (which fires no trigger), the dedup rows
-- that pointed into it are removed by the partition's time range.
CREATE INDEX task_dedup_timestamp_idx ON tasks.task_dedup (task_timestamp);
CREATE INDEX event_dedup_created_at_idx ON tasks.event_dedup (event_created_at);
