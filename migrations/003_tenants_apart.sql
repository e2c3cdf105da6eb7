-- wf schema, version 3: tenants held apart.
--
-- 1. Dedup keys are per tenant: the tenant (schema_name) is part of a key's
--    identity for tasks and events, so one tenant can neither block another's
--    work by guessing its keys nor learn another's tasks or events by reusing
--    them.
-- 2. What wf created for a tenant is recorded (an ownership record): the drop
--    handlers remove only schemas and tables found there, and a catalog cannot
--    be registered on a schema that exists but that wf did not create.

-- wf:database queue
ALTER TABLE tasks.task_dedup ADD COLUMN schema_name varchar(255);
UPDATE tasks.task_dedup d SET schema_name = t.schema_name
FROM tasks.tasks t WHERE t.task_id = d.task_id AND t."timestamp" = d.task_timestamp;
-- A key whose task is gone (none should be) is released.
DELETE FROM tasks.task_dedup WHERE schema_name IS NULL;
ALTER TABLE tasks.task_dedup ALTER COLUMN schema_name SET NOT NULL;
ALTER TABLE tasks.task_dedup DROP CONSTRAINT task_dedup_pkey;
ALTER TABLE tasks.task_dedup ADD PRIMARY KEY (schema_name, dedup_key);

ALTER TABLE tasks.event_dedup ADD COLUMN schema_name varchar(255);
UPDATE tasks.event_dedup d SET schema_name = e.schema_name
FROM tasks.events e WHERE e.event_id = d.event_id AND e.created_at = d.event_created_at;
DELETE FROM tasks.event_dedup WHERE schema_name IS NULL;
ALTER TABLE tasks.event_dedup ALTER COLUMN schema_name SET NOT NULL;
ALTER TABLE tasks.event_dedup DROP CONSTRAINT event_dedup_pkey;
ALTER TABLE tasks.event_dedup ADD PRIMARY KEY (schema_name, dedup_key);

CREATE OR REPLACE FUNCTION tasks.release_task_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasks.task_dedup
    WHERE schema_name = OLD.schema_name AND dedup_key = OLD.dedup_key AND task_id = OLD.task_id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION tasks.claim_task_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A terminal task brought back to life (requeue of a dead letter) takes
    -- its key back, or fails when a newer task of its tenant holds it.
    INSERT INTO tasks.task_dedup (schema_name, dedup_key, task_id, task_timestamp)
    VALUES (NEW.schema_name, NEW.dedup_key, NEW.task_id, NEW."timestamp");
    RETURN NULL;
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'dedup key % is held by another live task', NEW.dedup_key
        USING ERRCODE = 'unique_violation';
END $$;

CREATE OR REPLACE FUNCTION tasks.release_event_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tasks.event_dedup
    WHERE schema_name = OLD.schema_name AND dedup_key = OLD.dedup_key AND event_id = OLD.event_id;
    RETURN NULL;
END $$;

-- wf:database catalog
-- catalog.owned_schemas: the tenant schemas wf created (CREATE SCHEMA by wf
-- itself, recorded in the same transaction). catalog_drop drops only these.
CREATE TABLE catalog.owned_schemas (
    schema_name varchar(63) PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- catalog.owned_tables: the feature tables wf created in a tenant schema.
-- collection_drop drops only these.
CREATE TABLE catalog.owned_tables (
    schema_name varchar(63) NOT NULL REFERENCES catalog.owned_schemas (schema_name) ON DELETE CASCADE,
    table_name  varchar(63) NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schema_name, table_name)
);

-- What wf created before this version was not recorded: the schemas of the
-- registered catalogs and the tables of their collections, where they exist,
-- are taken as wf's (nothing else could have registered them).
INSERT INTO catalog.owned_schemas (schema_name)
SELECT c.schema_name FROM catalog.catalogs c
WHERE EXISTS (SELECT 1 FROM pg_namespace n WHERE n.nspname = c.schema_name)
ON CONFLICT DO NOTHING;

INSERT INTO catalog.owned_tables (schema_name, table_name)
SELECT c.schema_name, k.collection_id
FROM catalog.collections k JOIN catalog.catalogs c USING (catalog_id)
WHERE to_regclass(format('%I.%I', c.schema_name, k.collection_id)) IS NOT NULL
  AND EXISTS (SELECT 1 FROM catalog.owned_schemas o WHERE o.schema_name = c.schema_name)
ON CONFLICT DO NOTHING;

-- catalog.deletions: the registry's record that a catalog (collection_id '')
-- or a collection was deleted, with the schema it had, written in the
-- transaction that deletes it. A drop runs only when this confirms the
-- deletion it was asked to clean up after.
CREATE TABLE catalog.deletions (
    catalog_id    varchar(63) NOT NULL,
    collection_id varchar(63) NOT NULL DEFAULT '',
    schema_name   varchar(63) NOT NULL,
    deleted_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (catalog_id, collection_id, schema_name)
);
