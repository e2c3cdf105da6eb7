package store

import (
	"context"
	"errors"
	"fmt"
)

// Step task ends that wait for a step pass (migration 025): the ends of
// workflow step tasks that the store ending them could not apply to their
// runs, having no step hook (WithStepHook) or a hook whose specs do not
// declare the run's workflow. They are recorded in the transaction that
// ended the tasks, and taken, applied and deleted in one transaction by an
// instance that declares the workflow (engine/workflow Sweep).

// RecordStepEnds records the ends of step tasks for a later step pass, in
// the caller's transaction. A task recorded already (it ended again before
// a pass took its first end) is recorded once: the pass reads its latest
// end.
func (s *Store) RecordStepEnds(ctx context.Context, steps []FinishedStep) error {
	if len(steps) == 0 {
		return nil
	}
	tasks, runs := make([][16]byte, len(steps)), make([][16]byte, len(steps))
	for i, f := range steps {
		tasks[i], runs[i] = f.TaskID, f.RunID
	}
	const q = `
INSERT INTO tasks.workflow_step_ends (task_id, run_id)
SELECT * FROM unnest($1::uuid[], $2::uuid[])
ON CONFLICT (task_id) DO NOTHING`
	_, err := s.db.Exec(ctx, q, tasks, runs)
	return wrap("recording the ends of workflow step tasks", err)
}

// TakeStepEnds deletes up to limit recorded step task ends of runs of the
// workflows named, oldest first, leaving those another transaction holds,
// and returns the end of each task as it is now (a task that is no longer
// at an end, requeued by hand meanwhile, is left out: its next end is
// applied or recorded then). It must run in a transaction: the step pass
// applies the ends in it, and a rollback puts the rows back.
func (s *Store) TakeStepEnds(ctx context.Context, workflows []string, limit int) ([]FinishedStep, error) {
	if !s.inTx {
		return nil, errors.New("error taking the ends of workflow step tasks: not in a transaction")
	}
	ids, err := collectIDs(ctx, s, "taking the ends of workflow step tasks", `
DELETE FROM tasks.workflow_step_ends e
WHERE e.task_id = ANY (ARRAY(
        SELECT x.task_id FROM tasks.workflow_step_ends x
        JOIN tasks.workflow_runs r ON r.run_id = x.run_id
        WHERE r.workflow = ANY ($1::text[])
        ORDER BY x.recorded_at
        LIMIT $2
        FOR UPDATE OF x SKIP LOCKED))
RETURNING e.task_id`, workflows, limit)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	// By primary key, as finishTasksSQL reads them; its result's columns.
	keys, lo, hi := idKeys(ids)
	rows, err := s.db.Query(ctx, `
SELECT t.task_id, t.workflow_run_id, t.workflow_step, t.workflow_item, t.status,
       CASE WHEN t.status = 'COMPLETED' THEN t.outputs END, t.error
FROM tasks.tasks t
WHERE t.task_id = ANY (ARRAY(SELECT unnest($1::uuid[])))
  AND t."timestamp" BETWEEN $2 AND $3
  AND t.workflow_run_id IS NOT NULL
  AND t.status IN ('COMPLETED', 'FAILED', 'DEAD_LETTER', 'CANCELLED')`, keys, lo, hi)
	if err != nil {
		return nil, wrap("reading the ends of workflow step tasks", err)
	}
	_, steps, err := scanFinished(rows, len(ids))
	return steps, wrap("reading the ends of workflow step tasks", err)
}

// stepEnds hands the ends of step tasks a statement just made to the step
// hook, or, without one, records them for a step pass (RecordStepEnds),
// in the store's transaction.
func (s *Store) stepEnds(ctx context.Context, steps []FinishedStep) error {
	if len(steps) == 0 {
		return nil
	}
	if s.stepHook == nil {
		return s.RecordStepEnds(ctx, steps)
	}
	if err := s.stepHook(ctx, s, steps); err != nil {
		return fmt.Errorf("error advancing workflow runs: %w", err)
	}
	return nil
}
