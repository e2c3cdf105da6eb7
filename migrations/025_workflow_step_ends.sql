-- wf:database queue
-- wf schema, version 25: step task ends that wait for a step pass.
--
-- A run advances in the transaction that ends one of its step tasks, by
-- the step hook of the instance that ends it (engine/workflow Advance).
-- An instance that cannot advance the run, because its specs do not
-- declare the run's workflow (an instance with other specs, a remote worker
-- through an API without it, `wf exec`), records the task's end here
-- instead, in the same transaction. Every instance whose specs declare
-- workflows takes the rows of its workflows' runs (oldest first, SKIP
-- LOCKED), advances those runs and deletes the rows in one transaction
-- (engine/store/workflow_step_ends.go). The table is empty but for the
-- moments between such an end and the next step pass; a run deleted by
-- retention takes its rows with it.
CREATE TABLE tasks.workflow_step_ends (
    task_id     uuid PRIMARY KEY,
    run_id      uuid NOT NULL REFERENCES tasks.workflow_runs (run_id) ON DELETE CASCADE,
    recorded_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX workflow_step_ends_run_idx ON tasks.workflow_step_ends (run_id);
