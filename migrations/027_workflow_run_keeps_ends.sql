-- wf:database queue
-- wf schema, version 27: a workflow run keeps what it reads of its ended
-- step tasks.
--
-- Retention removes finished tasks by their own windows (dropping a past
-- month's partition, or deleting its expired rows), and those windows may
-- be shorter than a workflow's timeout. A run used to read two things from
-- its step tasks' rows after they ended, and lost them with the rows:
--
--   - a for_each step gathers its items' outputs when its last item ends:
--     the outputs of an item that completed long before were gone, so the
--     step read them as null;
--   - a step task that ended where the run's workflow is not declared is
--     recorded in tasks.workflow_step_ends for the step pass, which read the
--     task's end from its row: a pass that came after retention found no
--     row and dropped the end, and the run waited for its deadline.
--
-- So each item's outputs are kept by the run (tasks.workflow_items, written
-- in the transaction that ends the item, deleted with the run), and a
-- recorded step end carries the end itself (step, item, status, outputs,
-- error); the pass still prefers the task's row while it exists (a task
-- requeued by hand meanwhile is at no end). The outputs of the items that
-- already completed in running for_each steps are copied here, and the
-- pending ends are filled from their tasks, so runs in flight keep them too.
CREATE TABLE tasks.workflow_items (
    run_id  uuid    NOT NULL REFERENCES tasks.workflow_runs (run_id) ON DELETE CASCADE,
    step    text    NOT NULL,
    item    integer NOT NULL,  -- the item's index in the step's for_each list
    outputs jsonb,             -- its task's outputs (the latest completion)
    PRIMARY KEY (run_id, step, item)
);

INSERT INTO tasks.workflow_items (run_id, step, item, outputs)
SELECT DISTINCT ON (t.workflow_run_id, t.workflow_step, t.workflow_item)
       t.workflow_run_id, t.workflow_step, t.workflow_item, t.outputs
FROM tasks.workflow_steps s
JOIN tasks.tasks t ON t.workflow_run_id = s.run_id AND t.workflow_step = s.step
WHERE s.status = 'RUNNING' AND s.items IS NOT NULL
  AND t.workflow_item IS NOT NULL AND t.status = 'COMPLETED'
ORDER BY t.workflow_run_id, t.workflow_step, t.workflow_item, t.finished_at DESC;

ALTER TABLE tasks.workflow_step_ends
    ADD COLUMN step    text,     -- NULL only for a row recorded before version 27
    ADD COLUMN item    integer,  -- a for_each item's index, NULL otherwise
    ADD COLUMN status  text,
    ADD COLUMN outputs jsonb,
    ADD COLUMN error   text;

UPDATE tasks.workflow_step_ends e
SET step = t.workflow_step, item = t.workflow_item, status = t.status,
    outputs = CASE WHEN t.status = 'COMPLETED' THEN t.outputs END, error = t.error
FROM tasks.tasks t
WHERE t.task_id = e.task_id
  AND t.status IN ('COMPLETED', 'FAILED', 'DEAD_LETTER', 'CANCELLED');
