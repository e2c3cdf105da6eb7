-- wf:database queue
-- wf schema, version 6: every task keeps the history of its last 20 attempts.
--
-- tasks.tasks.attempt_log is a JSON array, oldest first, of one object per
-- attempt that ended: {"attempt", "owner_id", "started_at", "finished_at",
-- "outcome", "error"}, where outcome is the status the attempt left the task
-- in (PENDING for a retry). It is written by the statement that records the
-- outcome (and by a cancellation of a running task), so it costs no extra
-- statement and no extra row. Adding a nullable column without a default
-- changes only the catalog: no partition is rewritten.
ALTER TABLE tasks.tasks ADD COLUMN attempt_log jsonb;

-- tasks.append_attempt appends one attempt to a log and keeps the last 20.
CREATE FUNCTION tasks.append_attempt(log jsonb, attempt integer, owner_id text, started_at timestamptz,
                                     finished_at timestamptz, outcome text, error text)
RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_array_length(coalesce(log, '[]')) >= 20 THEN (log - 0) ELSE coalesce(log, '[]') END
           || jsonb_build_array(jsonb_build_object(
                'attempt', attempt, 'owner_id', owner_id, 'started_at', started_at,
                'finished_at', finished_at, 'outcome', outcome, 'error', error))
$$;
