package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// Step task ends that wait for a step pass (migrations 025 and 027): the
// ends of workflow step tasks that the store ending them could not apply to
// their runs, having no step hook (WithStepHook) or a hook whose specs do
// not declare the run's workflow. They are recorded, with the end itself,
// in the transaction that ended the tasks, and taken, applied and deleted
// in one transaction by an instance that declares the workflow
// (engine/workflow Sweep). The end is kept in the record because the
// task's row may be gone by the time a pass comes: retention removes
// finished tasks by their own windows, whatever runs still wait for.

// RecordStepEnds records the ends of step tasks for a later step pass, in
// the caller's transaction. A task recorded already (it ended again before
// a pass took its first end) keeps one record, with its latest end.
func (s *Store) RecordStepEnds(ctx context.Context, steps []FinishedStep) error {
	if len(steps) == 0 {
		return nil
	}
	latest := make(map[uuid.UUID]int, len(steps)) // one row per task: ON CONFLICT changes a row once per statement
	for i, f := range steps {
		latest[f.TaskID] = i
	}
	n := len(latest)
	tasks, runs := make([][16]byte, 0, n), make([][16]byte, 0, n)
	names, statuses := make([]string, 0, n), make([]string, 0, n)
	items := make([]*int32, 0, n)
	outputs := make([][]byte, 0, n)
	errs := make([]*string, 0, n)
	for i, f := range steps {
		if latest[f.TaskID] != i {
			continue
		}
		tasks, runs = append(tasks, f.TaskID), append(runs, f.RunID)
		names, statuses, errs = append(names, f.Step), append(statuses, string(f.Status)), append(errs, f.Error)
		var item *int32
		if f.Item >= 0 {
			v := int32(f.Item)
			item = &v
		}
		items = append(items, item)
		var out []byte
		if len(f.Outputs) > 0 {
			out = appendJSONValue(nil, f.Outputs)
		}
		outputs = append(outputs, out)
	}
	const q = `
INSERT INTO tasks.workflow_step_ends (task_id, run_id, step, item, status, outputs, error)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::jsonb[], $7::text[])
ON CONFLICT (task_id) DO UPDATE
SET step = EXCLUDED.step, item = EXCLUDED.item, status = EXCLUDED.status, outputs = EXCLUDED.outputs, error = EXCLUDED.error`
	_, err := s.db.Exec(ctx, q, tasks, runs, names, items, statuses, outputs, errs)
	return wrap("recording the ends of workflow step tasks", err)
}

// TakeStepEnds deletes up to limit recorded step task ends of runs of the
// workflows named, oldest first, leaving those another transaction holds,
// and returns them. A task whose row still exists is read as it is now: a
// task no longer at an end (requeued by hand meanwhile) is left out, its
// next end is applied or recorded then. A task whose row retention removed
// is returned as recorded. It must run in a transaction: the step pass
// applies the ends in it, and a rollback puts the rows back.
func (s *Store) TakeStepEnds(ctx context.Context, workflows []string, limit int) ([]FinishedStep, error) {
	if !s.inTx {
		return nil, errors.New("error taking the ends of workflow step tasks: not in a transaction")
	}
	recorded, err := queryAll(ctx, s.db, "taking the ends of workflow step tasks", `
DELETE FROM tasks.workflow_step_ends e
WHERE e.task_id = ANY (ARRAY(
        SELECT x.task_id FROM tasks.workflow_step_ends x
        JOIN tasks.workflow_runs r ON r.run_id = x.run_id
        WHERE r.workflow = ANY ($1::text[])
        ORDER BY x.recorded_at
        LIMIT $2
        FOR UPDATE OF x SKIP LOCKED))
RETURNING e.task_id, e.run_id, e.step, e.item, coalesce(e.status, ''), e.outputs, e.error`, scanFinishedStep, workflows, limit)
	if err != nil || len(recorded) == 0 {
		return nil, err
	}
	return s.currentEnds(ctx, recorded)
}

// TakeRunStepEnds deletes the recorded step task ends of one run, waiting
// for a step pass that holds some, and returns them as TakeStepEnds does
// (each read as its task is now). A retry takes them, with the run locked,
// before it resets the run's steps: they are the last attempt's, and a step
// pass applying one later would take it for the new attempt's. It must run
// in a transaction.
func (s *Store) TakeRunStepEnds(ctx context.Context, runID uuid.UUID) ([]FinishedStep, error) {
	if !s.inTx {
		return nil, errors.New("error taking the ends of a workflow run's step tasks: not in a transaction")
	}
	recorded, err := queryAll(ctx, s.db, "taking the ends of a workflow run's step tasks", `
DELETE FROM tasks.workflow_step_ends e
WHERE e.run_id = $1
RETURNING e.task_id, e.run_id, e.step, e.item, coalesce(e.status, ''), e.outputs, e.error`, scanFinishedStep, runID)
	if err != nil || len(recorded) == 0 {
		return nil, err
	}
	return s.currentEnds(ctx, recorded)
}

// currentEnds reads the recorded ends as their tasks are now: a task no
// longer at an end is left out, a task whose row is gone is kept as
// recorded.
func (s *Store) currentEnds(ctx context.Context, recorded []FinishedStep) ([]FinishedStep, error) {
	ids := make([]uuid.UUID, len(recorded))
	for i, f := range recorded {
		ids[i] = f.TaskID
	}
	// By primary key, as finishTasksSQL reads them; its result's columns.
	keys, lo, hi := idKeys(ids)
	rows, err := queryAll(ctx, s.db, "reading the ends of workflow step tasks", `
SELECT t.task_id, t.workflow_run_id, t.workflow_step, t.workflow_item, t.status,
       CASE WHEN t.status = 'COMPLETED' THEN t.outputs END, t.error
FROM tasks.tasks t
WHERE t.task_id = ANY (ARRAY(SELECT unnest($1::uuid[])))
  AND t."timestamp" BETWEEN $2 AND $3
  AND t.workflow_run_id IS NOT NULL`, scanFinishedStep, keys, lo, hi)
	if err != nil {
		return nil, err
	}
	now := make(map[uuid.UUID]FinishedStep, len(rows))
	for _, f := range rows {
		now[f.TaskID] = f
	}
	steps := make([]FinishedStep, 0, len(recorded))
	for _, f := range recorded {
		if cur, ok := now[f.TaskID]; ok {
			f = cur
		}
		// A row recorded before migration 027 has no end of its own
		// (Status ""): its task's row was its only copy.
		if f.Status.Terminal() {
			steps = append(steps, f)
		}
	}
	return steps, nil
}

// scanFinishedStep reads task id, run id, step, item (NULL: -1), status,
// outputs and error.
func scanFinishedStep(row pgx.Row) (FinishedStep, error) {
	var id, run [16]byte
	var step *string
	var item *int32
	var status string
	var outputs []byte
	f := FinishedStep{Item: -1}
	err := row.Scan(&id, &run, &step, &item, &status, &outputs, &f.Error)
	f.TaskID, f.RunID, f.Status, f.Outputs = id, run, wftype.TaskStatus(status), outputs
	if step != nil {
		f.Step = *step
	}
	if item != nil {
		f.Item = int(*item)
	}
	return f, err
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
