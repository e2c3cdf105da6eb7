-- wf schema, version 1: the tenant registry, the partitioned task table and
-- events outbox, and global deduplication that holds across partitions.

-- wf:database catalog
CREATE SCHEMA IF NOT EXISTS catalog;
-- wf:database queue
CREATE SCHEMA IF NOT EXISTS tasks;
-- wf:database catalog

-- The minimal tenant registry: ingestion validates against it and the
-- janitor's orphan cleanup reads it.
CREATE TABLE catalog.catalogs (
    catalog_id  varchar(63)  PRIMARY KEY CHECK (catalog_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    schema_name varchar(63)  NOT NULL UNIQUE CHECK (schema_name ~ '^[a-z_][a-z0-9_]{0,62}$' AND schema_name <> 'system'),
    title       text,
    description text,
    metadata    jsonb        NOT NULL DEFAULT '{}',
    created_at  timestamptz  NOT NULL DEFAULT now(),
    updated_at  timestamptz  NOT NULL DEFAULT now()
);

CREATE TABLE catalog.collections (
    catalog_id    varchar(63) NOT NULL REFERENCES catalog.catalogs (catalog_id) ON DELETE CASCADE,
    collection_id varchar(63) NOT NULL CHECK (collection_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    title         text,
    layer_config  jsonb       NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (catalog_id, collection_id)
);

-- wf:database queue
-- tasks.tasks: one row per task, RANGE-partitioned by month on timestamp.
-- task_id is a UUIDv7 and timestamp is exactly the time in its first 48 bits,
-- so a task's partition is derived from its id and a look-up by id prunes to
-- one partition.
CREATE TABLE tasks.tasks (
    task_id           uuid         NOT NULL,
    "timestamp"       timestamptz  NOT NULL,
    schema_name       varchar(255) NOT NULL,
    scope             varchar(50)  NOT NULL CHECK (scope IN ('CATALOG', 'SYSTEM', 'ASSET')),
    execution_mode    varchar(20)  NOT NULL CHECK (execution_mode IN ('SYNCHRONOUS', 'ASYNCHRONOUS')),
    task_type         varchar(255) NOT NULL,
    status            varchar(20)  NOT NULL DEFAULT 'PENDING'
                      CHECK (status IN ('PENDING', 'ACTIVE', 'COMPLETED', 'FAILED', 'DEAD_LETTER', 'CANCELLED')),
    dedup_key         varchar(512),
    inputs            jsonb        NOT NULL DEFAULT '{}',
    outputs           jsonb,
    progress          jsonb,
    error             text,
    priority          smallint     NOT NULL DEFAULT 0,
    retry_count       integer      NOT NULL DEFAULT 0,
    max_retries       integer      NOT NULL DEFAULT 3,
    attempts          integer      NOT NULL DEFAULT 0,
    owner_id          varchar(255),
    run_after         timestamptz  NOT NULL DEFAULT now(),
    locked_until      timestamptz,
    started_at        timestamptz,
    finished_at       timestamptz,
    last_heartbeat_at timestamptz,
    PRIMARY KEY (task_id, "timestamp")
) PARTITION BY RANGE ("timestamp");

-- The claim path: only PENDING rows are indexed, so the index stays small
-- however many finished rows the partitions hold.
CREATE INDEX tasks_claim_idx ON tasks.tasks (task_type, execution_mode, priority DESC, run_after, task_id)
    WHERE status = 'PENDING';
-- The janitor: leases that expired.
CREATE INDEX tasks_active_lease_idx ON tasks.tasks (locked_until) WHERE status = 'ACTIVE';
-- Listing by tenant and time (monitoring API, keyset pagination).
CREATE INDEX tasks_schema_time_idx ON tasks.tasks (schema_name, "timestamp" DESC, task_id DESC);
-- Retention: finished rows by finish time.
CREATE INDEX tasks_finished_idx ON tasks.tasks (status, finished_at) WHERE status IN ('COMPLETED', 'FAILED', 'DEAD_LETTER', 'CANCELLED');

-- Global task deduplication. PostgreSQL cannot put a UNIQUE index on a
-- partitioned table without the partition key, and a per-partition index
-- would let a duplicate through across a month boundary. This small
-- unpartitioned table holds one row per dedup key of every non-terminal task
-- and is written in the same transaction as the task. The triggers below keep
-- the invariant in the database whatever path changes a task:
--   a task with a dedup key is PENDING or ACTIVE  <=>  its key is in task_dedup.
CREATE TABLE tasks.task_dedup (
    dedup_key      varchar(512) PRIMARY KEY,
    task_id        uuid         NOT NULL,
    task_timestamp timestamptz  NOT NULL
);

CREATE FUNCTION tasks.release_task_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasks.task_dedup WHERE dedup_key = OLD.dedup_key AND task_id = OLD.task_id;
    RETURN NULL;
END $$;

CREATE FUNCTION tasks.claim_task_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A terminal task brought back to life (requeue of a dead letter) takes
    -- its key back, or fails when a newer task holds it.
    INSERT INTO tasks.task_dedup (dedup_key, task_id, task_timestamp)
    VALUES (NEW.dedup_key, NEW.task_id, NEW."timestamp");
    RETURN NULL;
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'dedup key % is held by another live task', NEW.dedup_key
        USING ERRCODE = 'unique_violation';
END $$;

CREATE TRIGGER tasks_release_dedup AFTER UPDATE OF status ON tasks.tasks
    FOR EACH ROW
    WHEN (OLD.dedup_key IS NOT NULL
          AND OLD.status IN ('PENDING', 'ACTIVE')
          AND NEW.status NOT IN ('PENDING', 'ACTIVE'))
    EXECUTE FUNCTION tasks.release_task_dedup();

CREATE TRIGGER tasks_release_dedup_on_delete AFTER DELETE ON tasks.tasks
    FOR EACH ROW
    WHEN (OLD.dedup_key IS NOT NULL AND OLD.status IN ('PENDING', 'ACTIVE'))
    EXECUTE FUNCTION tasks.release_task_dedup();

CREATE TRIGGER tasks_claim_dedup AFTER UPDATE OF status ON tasks.tasks
    FOR EACH ROW
    WHEN (NEW.dedup_key IS NOT NULL
          AND OLD.status NOT IN ('PENDING', 'ACTIVE')
          AND NEW.status IN ('PENDING', 'ACTIVE'))
    EXECUTE FUNCTION tasks.claim_task_dedup();

-- tasks.events: the durable outbox, RANGE-partitioned by month on created_at.
-- Consumed events are deleted; failing ones are retried, then DEAD_LETTER.
CREATE TABLE tasks.events (
    event_id         uuid         NOT NULL,
    created_at       timestamptz  NOT NULL,
    event_type       varchar(255) NOT NULL,
    scope            varchar(50)  NOT NULL CHECK (scope IN ('PLATFORM', 'CATALOG', 'COLLECTION', 'ASSET')),
    schema_name      varchar(255) NOT NULL,
    payload          jsonb        NOT NULL DEFAULT '{}',
    status           varchar(20)  NOT NULL DEFAULT 'PENDING'
                     CHECK (status IN ('PENDING', 'PROCESSING', 'DEAD_LETTER')),
    dedup_key        varchar(512),
    attempts         integer      NOT NULL DEFAULT 0,
    run_after        timestamptz  NOT NULL DEFAULT now(),
    locked_until     timestamptz,
    owner_id         varchar(255),
    error            text,
    dead_lettered_at timestamptz,
    PRIMARY KEY (event_id, created_at)
) PARTITION BY RANGE (created_at);

CREATE INDEX events_claim_idx ON tasks.events (run_after, event_id) WHERE status = 'PENDING';
CREATE INDEX events_processing_idx ON tasks.events (locked_until) WHERE status = 'PROCESSING';
CREATE INDEX events_dead_idx ON tasks.events (dead_lettered_at) WHERE status = 'DEAD_LETTER';

-- Global event deduplication, same scheme as tasks: a key is held while its
-- event is PENDING or PROCESSING (the seed's index excluded DEAD_LETTER, and
-- consumed events are deleted).
CREATE TABLE tasks.event_dedup (
    dedup_key        varchar(512) PRIMARY KEY,
    event_id         uuid         NOT NULL,
    event_created_at timestamptz  NOT NULL
);

CREATE FUNCTION tasks.release_event_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasks.event_dedup WHERE dedup_key = OLD.dedup_key AND event_id = OLD.event_id;
    RETURN NULL;
END $$;

CREATE TRIGGER events_release_dedup AFTER UPDATE OF status ON tasks.events
    FOR EACH ROW
    WHEN (OLD.dedup_key IS NOT NULL AND OLD.status <> 'DEAD_LETTER' AND NEW.status = 'DEAD_LETTER')
    EXECUTE FUNCTION tasks.release_event_dedup();

CREATE TRIGGER events_release_dedup_on_delete AFTER DELETE ON tasks.events
    FOR EACH ROW
    WHEN (OLD.dedup_key IS NOT NULL AND OLD.status <> 'DEAD_LETTER')
    EXECUTE FUNCTION tasks.release_event_dedup();

-- uuid_v7 returns a version 7 UUID carrying the given time (milliseconds),
-- for rows the database itself creates (janitor events). Ids made in Go use
-- the same layout.
CREATE FUNCTION tasks.uuid_v7(ts timestamptz) RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send(floor(extract(epoch FROM ts) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1), 'hex')::uuid
$$;

-- ensure_partitions creates the monthly partitions of tasks.tasks and
-- tasks.events for the month holding from_ts and the next (months - 1)
-- months. It serialises on an advisory lock so concurrent callers never race
-- on CREATE TABLE.
CREATE FUNCTION tasks.ensure_partitions(from_ts timestamptz, months integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    first_month date := date_trunc('month', from_ts AT TIME ZONE 'UTC')::date;
    m date;
    created integer := 0;
    part text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('wf:ensure_partitions'));
    FOR i IN 0 .. months - 1 LOOP
        m := (first_month + make_interval(months => i))::date;
        FOREACH part IN ARRAY ARRAY['tasks', 'events'] LOOP
            IF to_regclass(format('tasks.%s_p%s', part, to_char(m, 'YYYY_MM'))) IS NULL THEN
                EXECUTE format(
                    'CREATE TABLE tasks.%I PARTITION OF tasks.%I FOR VALUES FROM (%L) TO (%L)',
                    part || '_p' || to_char(m, 'YYYY_MM'), part,
                    (m::timestamp AT TIME ZONE 'UTC'),
                    ((m + interval '1 month')::timestamp AT TIME ZONE 'UTC'));
                created := created + 1;
            END IF;
        END LOOP;
    END LOOP;
    RETURN created;
END $$;

SELECT tasks.ensure_partitions(now(), 3);
