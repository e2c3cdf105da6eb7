-- wf:database queue
-- wf schema, version 32: what started a workflow run, child runs, and the
-- outputs a run ends with.
--
-- A run may now be started by a Subscription (one run per event and
-- subscription) or a Schedule (one run per tick), or by a step of another
-- run (a child run, `workflow:` step kind). The columns are nullable and
-- have no default, so adding them changes only the catalog; the runs
-- written before read as started by the API, without a parent or outputs.
--
--   parent_run_id, parent_step, parent_item: the step (and for_each item)
--     of the run that started this one; its end advances that run, in the
--     transaction that ends it (engine/workflow child.go).
--   started_by: what started the run, as JSON: {"kind": "event",
--     "subscription", "event_id"} or {"kind": "schedule", "schedule",
--     "tick"}; NULL for the API or the CLI.
--   start_key: the dedup key of a triggered run ("evt:EVENT:SUBSCRIPTION",
--     "sched:SCHEDULE:TICK"). The unique index holds across every instance
--     and month (the table is not partitioned): two consumers racing on one
--     event, or two leaders on one tick, start one run; the second insert
--     waits for the first to commit and then inserts nothing.
--   outputs: the run's outputs (the workflow's outputs expressions),
--     evaluated when it completes; a parent's child step completes with them.
ALTER TABLE tasks.workflow_runs
    ADD COLUMN parent_run_id uuid,
    ADD COLUMN parent_step   text,
    ADD COLUMN parent_item   integer,
    ADD COLUMN started_by    jsonb,
    ADD COLUMN start_key     text,
    ADD COLUMN outputs       jsonb;

CREATE UNIQUE INDEX workflow_runs_start_key_idx ON tasks.workflow_runs (start_key)
    WHERE start_key IS NOT NULL;
CREATE INDEX workflow_runs_parent_idx ON tasks.workflow_runs (parent_run_id)
    WHERE parent_run_id IS NOT NULL;
