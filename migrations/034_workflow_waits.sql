-- wf:database queue
-- wf schema, version 34: workflow steps that wait (sleep, wait_for_event,
-- approval) without anyone polling them.
--
-- A waiting step is a RUNNING row of tasks.workflow_steps with no task: a
-- sleep step has wake_at (when it wakes), a wait_for_event step wait_event
-- (the event type it waits for) and an approval step wait_signal (the
-- signal it waits for), both with wake_at when they declare a timeout.
-- Thousands of waiting steps must cost nothing until their time or their
-- event comes, so nothing reads them one by one:
--
--   - the leader's wait pass reads the earliest wake_at through
--     workflow_steps_wake_idx (one statement finds every due step and the
--     next wake time, then it sleeps until then or a notification);
--   - an event is matched to the steps waiting for its type when it is
--     written: the statement trigger below, on every insert into the
--     outbox (whatever statement emits it: an API emit, a task's outbox
--     rows, a COPY), looks the event's type up in workflow_steps_event_idx
--     and records one delivery per waiting step of the event's tenant in
--     tasks.workflow_deliveries, in the emitting transaction. The wait pass
--     (woken by the events channel's NOTIFY the emit sends anyway)
--     evaluates each step's match expression and ends the step, or drops
--     the delivery;
--   - a signal is one transaction of the API request that sends it (the
--     run's row locked, the step ended, what it unblocks created).
--
-- The deliveries table has no foreign key to the runs on purpose: an
-- emitting transaction would otherwise take a KEY SHARE lock on a run's row,
-- and wait for a transaction that advances the run. The wait pass deletes
-- the deliveries of runs that ended or are gone.
--
-- The new columns are nullable without defaults (a catalog-only change);
-- TIMED_OUT is a new step status (a wait that timed out with on_timeout:
-- continue). Rows written by the code before this migration stay valid.
ALTER TABLE tasks.workflow_steps ADD COLUMN wake_at timestamptz;
ALTER TABLE tasks.workflow_steps ADD COLUMN wait_event text;
ALTER TABLE tasks.workflow_steps ADD COLUMN wait_signal text;
ALTER TABLE tasks.workflow_steps DROP CONSTRAINT workflow_steps_status_check;
ALTER TABLE tasks.workflow_steps ADD CONSTRAINT workflow_steps_status_check
    CHECK (status IN ('WAITING', 'RUNNING', 'COMPLETED', 'FAILED', 'SKIPPED', 'CANCELLED', 'TIMED_OUT'));
CREATE INDEX workflow_steps_wake_idx ON tasks.workflow_steps (wake_at)
    WHERE status = 'RUNNING' AND wake_at IS NOT NULL;
CREATE INDEX workflow_steps_event_idx ON tasks.workflow_steps (wait_event)
    WHERE status = 'RUNNING' AND wait_event IS NOT NULL;

CREATE TABLE tasks.workflow_deliveries (
    run_id      uuid        NOT NULL,
    step        text        NOT NULL,
    event_id    uuid        NOT NULL,
    event_type  text        NOT NULL,
    schema_name text        NOT NULL,
    payload     jsonb       NOT NULL,
    created_at  timestamptz NOT NULL,  -- the event's
    PRIMARY KEY (run_id, step, event_id)
);

CREATE FUNCTION tasks.deliver_events_to_waiting_steps() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tasks.workflow_deliveries (run_id, step, event_id, event_type, schema_name, payload, created_at)
    SELECT s.run_id, s.step, e.event_id, e.event_type, e.schema_name, e.payload, e.created_at
    FROM new_events e
    JOIN tasks.workflow_steps s ON s.wait_event = e.event_type AND s.status = 'RUNNING'
    JOIN tasks.workflow_runs r ON r.run_id = s.run_id AND r.schema_name = e.schema_name
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_deliver_to_waiting_steps
    AFTER INSERT ON tasks.events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION tasks.deliver_events_to_waiting_steps();
