-- wf:database queue
-- wf schema, version 33: a dedup key may hold for a period (#38).
--
-- Until now a task's dedup key was held while the task was PENDING or
-- ACTIVE, and freed as it ended. A task type may now declare
-- `unique: {period: 24h, states: [COMPLETED]}`: its tasks' keys are also
-- held after the task ended in one of those states, until the period
-- (counted from the enqueue) is over, so a second enqueue within it is
-- deduplicated against the finished task.
--
-- The keys stay in tasks.task_dedup (one row per tenant and key, across
-- every month partition of tasks.tasks; a unique index on the partitioned
-- table could not span them). A row now also says:
--   expires_at   when the key's period ends (NULL: no period, the key is
--                held while the task is live, as before);
--   keep_states  the ended statuses that keep holding the key until then;
--   ended_at     when the task ended in one of them (NULL while it is live).
-- The invariant the triggers keep becomes:
--   a task holds its key  <=>  it is PENDING or ACTIVE, or it ended in one
--   of its keep_states and expires_at is still ahead.
-- A row that ended and whose period is over is stale: an enqueue of the key
-- created at or after expires_at takes it over (insertTasksSQL; periods are
-- reckoned in task creation times, the times their UUIDv7 ids carry), the
-- leader's maintenance deletes it (DeleteStaleDedupKeys), and a requeue of
-- another task of the key may take it back.
--
-- Rows written before this version have no period: they behave as they did.
ALTER TABLE tasks.task_dedup
    ADD COLUMN expires_at  timestamptz,
    ADD COLUMN keep_states text[],
    ADD COLUMN ended_at    timestamptz;

-- Maintenance finds the stale rows of ended tasks by their expiry.
CREATE INDEX task_dedup_ended_expiry_idx ON tasks.task_dedup (expires_at) WHERE ended_at IS NOT NULL;

-- A task that ends (or is deleted) frees its key, unless it ended in one of
-- its key's keep_states within the period: then the key is kept, marked
-- ended. The DELETE comes first so that a key without a period, the common
-- case, costs the one probe it did.
CREATE OR REPLACE FUNCTION tasks.release_task_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ended text; -- the status the task ended in; NULL when it is deleted
BEGIN
    IF TG_OP = 'UPDATE' THEN
        ended := NEW.status;
    END IF;
    DELETE FROM tasks.task_dedup
    WHERE schema_name = OLD.schema_name AND dedup_key = OLD.dedup_key AND task_id = OLD.task_id
      AND (ended IS NULL OR expires_at IS NULL OR NOT (ended = ANY (coalesce(keep_states, '{}'))));
    IF NOT FOUND AND ended IS NOT NULL THEN
        UPDATE tasks.task_dedup SET ended_at = now()
        WHERE schema_name = OLD.schema_name AND dedup_key = OLD.dedup_key AND task_id = OLD.task_id;
    END IF;
    RETURN NULL;
END $$;

-- A terminal task brought back to life (requeue) takes its key back: its
-- own kept row, a free key, or a stale row of another task (which it takes
-- over without that task's period). It fails while another task holds it.
CREATE OR REPLACE FUNCTION tasks.claim_task_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tasks.task_dedup AS d (schema_name, dedup_key, task_id, task_timestamp)
    VALUES (NEW.schema_name, NEW.dedup_key, NEW.task_id, NEW."timestamp")
    ON CONFLICT (schema_name, dedup_key) DO UPDATE
        SET task_id = EXCLUDED.task_id, task_timestamp = EXCLUDED.task_timestamp, ended_at = NULL,
            expires_at = CASE WHEN d.task_id = EXCLUDED.task_id THEN d.expires_at END,
            keep_states = CASE WHEN d.task_id = EXCLUDED.task_id THEN d.keep_states END
        WHERE d.task_id = EXCLUDED.task_id OR (d.ended_at IS NOT NULL AND d.expires_at <= now());
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup key % is held by another live task', NEW.dedup_key
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NULL;
END $$;

-- A deleted task frees its key whatever its status: an ended task may hold
-- one now. (Retention's drop of a whole partition fires no trigger; it
-- deletes the partition's keys itself, DropTaskPartition.)
DROP TRIGGER tasks_release_dedup_on_delete ON tasks.tasks;
CREATE TRIGGER tasks_release_dedup_on_delete AFTER DELETE ON tasks.tasks
    FOR EACH ROW
    WHEN (OLD.dedup_key IS NOT NULL)
    EXECUTE FUNCTION tasks.release_task_dedup();
