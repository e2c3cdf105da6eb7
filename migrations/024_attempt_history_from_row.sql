-- wf:database queue
-- wf schema, version 24: the attempt that ended a task is read from its row.
--
-- Until now every completion appended its attempt to tasks.tasks.attempt_log
-- (migration 006), although for a task that ended (COMPLETED, FAILED,
-- DEAD_LETTER, CANCELLED) that last entry only repeats the row's own
-- columns: attempts, owner_id, started_at, finished_at, status and error.
-- Building it cost every completion a jsonb build and about 200 bytes of
-- row (and of WAL). From this version on, the log holds only the attempts
-- whose facts the row no longer holds: retries and snoozes (outcome PENDING
-- or SNOOZED, whose columns the next attempt overwrites) and the cancel of
-- a running task (whose error the row may not hold: a cancel keeps an
-- earlier attempt's error). The attempt that left a task in its terminal
-- status is added when the history is read, by tasks.attempt_history, and
-- a statement that moves a task out of its terminal status (a requeue)
-- appends it first, through the same function, so nothing is lost.
--
-- Rows written before this version already hold their terminal attempt in
-- the log: tasks.attempt_history tells them apart by attempt number (a log
-- whose last entry is of the task's current attempt is whole), so they read
-- as before, without being rewritten.
--
-- tasks.attempt_history returns log with the attempt that ended the task
-- appended (the last 20 kept, as tasks.append_attempt keeps them) when the
-- task is in a terminal status, has run (attempts > 0) and its log's last
-- entry is of an earlier attempt; otherwise log as it is. A task cancelled
-- while PENDING has no attempt of its own to add: its log's last entry is
-- of its current attempt (a retry or a snooze), or it never ran.
CREATE FUNCTION tasks.attempt_history(log jsonb, attempts integer, owner_id text, started_at timestamptz,
                                      finished_at timestamptz, status text, error text)
RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN status IN ('COMPLETED', 'FAILED', 'DEAD_LETTER', 'CANCELLED')
                 AND attempts > 0
                 AND coalesce((log -> -1 ->> 'attempt')::integer, 0) < attempts
           THEN tasks.append_attempt(log, attempts, owner_id, started_at, finished_at, status, error)
           ELSE log END
$$;
