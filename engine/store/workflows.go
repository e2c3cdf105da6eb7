package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// This file holds the statements of workflow runs (migration 018): a run is
// a row of tasks.workflow_runs, each of its steps a row of
// tasks.workflow_steps, and the steps' tasks are ordinary tasks that carry
// the run's id. Every decision about a run is taken with its row locked
// (LockWorkflowRuns), in the transaction that finished the step's task.

// FinishedStep is a task of a workflow step that FinishTasks moved to an end
// (COMPLETED, FAILED or DEAD_LETTER), or that a cancel by hand moved to
// CANCELLED (CancelTask, CancelTasks).
type FinishedStep struct {
	TaskID uuid.UUID
	RunID  uuid.UUID
	Step   string
	// Item is the item's index for a for_each step, -1 otherwise.
	Item    int
	Status  wftype.TaskStatus
	Outputs json.RawMessage
	Error   *string
	// Child is set for the end of a child run (a `workflow:` step): the
	// child's workflow; TaskID is then the child run's id.
	Child string
}

// StepHook is told, inside the transaction of a FinishTasks call or of a
// cancel by hand (tx), about the workflow steps whose tasks that call ended; what it writes through tx
// commits with the outcomes or not at all. An error rolls both back.
type StepHook func(ctx context.Context, tx *Store, steps []FinishedStep) error

// WithStepHook returns a copy of the store whose FinishTasks, CancelTask
// and CancelTasks call hook for the workflow steps they end, in the same
// transaction (opening one
// when the store is not in one already).
func (s *Store) WithStepHook(hook StepHook) *Store {
	cp := *s
	cp.stepHook = hook
	return &cp
}

// workflowRunColumns is the column list of a run, in scanWorkflowRun's order.
const workflowRunColumns = `run_id, workflow, schema_name, status, inputs, error, created_at, deadline, finished_at, attempt,
    parent_run_id, parent_step, coalesce(parent_item, -1), started_by, outputs`

func scanWorkflowRun(row pgx.Row) (wftype.WorkflowRun, error) {
	var r wftype.WorkflowRun
	var id [16]byte
	var status string
	var inputs, startedBy, outputs []byte
	var parent *[16]byte
	var parentStep *string
	err := row.Scan(&id, &r.Workflow, &r.SchemaName, &status, &inputs, &r.Error, &r.CreatedAt, &r.Deadline, &r.FinishedAt, &r.Attempt,
		&parent, &parentStep, &r.ParentItem, &startedBy, &outputs)
	r.ID, r.Status, r.Inputs, r.Outputs = id, wftype.RunStatus(status), inputs, outputs
	if parent != nil {
		p := uuid.UUID(*parent)
		r.ParentRunID = &p
	}
	if parentStep != nil {
		r.ParentStep = *parentStep
	}
	if len(startedBy) > 0 && err == nil {
		r.StartedBy = new(wftype.RunTrigger)
		if uerr := json.Unmarshal(startedBy, r.StartedBy); uerr != nil {
			err = fmt.Errorf("error reading what started workflow run %s: %w", uuid.UUID(id), uerr)
		}
	}
	r.CreatedAt, r.Deadline = r.CreatedAt.UTC(), r.Deadline.UTC()
	if r.FinishedAt != nil {
		u := r.FinishedAt.UTC()
		r.FinishedAt = &u
	}
	return r, err
}

// workflowStepColumns is the column list of a step, in scanWorkflowStep's order.
const workflowStepColumns = `run_id, step, status, items, started, done, outputs, error, updated_at, wake_at, wait_event, wait_signal`

func scanWorkflowStep(row pgx.Row) (wftype.WorkflowStep, error) {
	var st wftype.WorkflowStep
	var id [16]byte
	var status string
	var outputs []byte
	err := row.Scan(&id, &st.Step, &status, &st.Items, &st.Started, &st.Done, &outputs, &st.Error, &st.UpdatedAt,
		&st.WakeAt, &st.WaitEvent, &st.WaitSignal)
	st.RunID, st.Status, st.Outputs, st.UpdatedAt = id, wftype.StepStatus(status), outputs, st.UpdatedAt.UTC()
	if st.WakeAt != nil {
		u := st.WakeAt.UTC()
		st.WakeAt = &u
	}
	return st, err
}

// SaveWorkflowSteps writes the status, counts, outputs and error of steps
// (matched by run and name) in one statement. A step that has no row yet
// gets one: a step the specs added after its run started.
func (s *Store) SaveWorkflowSteps(ctx context.Context, steps []wftype.WorkflowStep, now *time.Time) error {
	if len(steps) == 0 {
		return nil
	}
	n := len(steps)
	runs := make([][16]byte, n)
	names, statuses := make([]string, n), make([]string, n)
	items := make([]*int32, n)
	started, done := make([]int32, n), make([]int32, n)
	outputs := make([][]byte, n)
	errs := make([]*string, n)
	wakes := make([]*time.Time, n)
	waitEvents, waitSignals := make([]*string, n), make([]*string, n)
	for i, st := range steps {
		wakes[i], waitEvents[i], waitSignals[i] = st.WakeAt, st.WaitEvent, st.WaitSignal
		runs[i], names[i], statuses[i] = st.RunID, st.Step, string(st.Status)
		if st.Items != nil {
			v := int32(*st.Items)
			items[i] = &v
		}
		started[i], done[i], errs[i] = int32(st.Started), int32(st.Done), st.Error
		if len(st.Outputs) > 0 {
			outputs[i] = appendJSONValue(nil, st.Outputs)
		}
	}
	const q = `
INSERT INTO tasks.workflow_steps AS s (run_id, step, status, items, started, done, outputs, error,
                                       wake_at, wait_event, wait_signal, updated_at)
SELECT u.*, coalesce($9::timestamptz, now())
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::jsonb[], $8::text[],
            $10::timestamptz[], $11::text[], $12::text[])
     AS u(run_id, step, status, items, started, done, outputs, error, wake_at, wait_event, wait_signal)
ON CONFLICT (run_id, step) DO UPDATE
SET status = EXCLUDED.status, items = EXCLUDED.items, started = EXCLUDED.started, done = EXCLUDED.done,
    outputs = EXCLUDED.outputs, error = EXCLUDED.error, updated_at = EXCLUDED.updated_at,
    wake_at = EXCLUDED.wake_at, wait_event = EXCLUDED.wait_event, wait_signal = EXCLUDED.wait_signal`
	_, err := s.db.Exec(ctx, q, runs, names, statuses, items, started, done, outputs, errs, now, wakes, waitEvents, waitSignals)
	return wrap("saving workflow steps", err)
}

// SaveWorkflowRun writes a run's status, error, attempt, deadline and
// outputs; finished_at is set when the status is an end, cleared when
// RUNNING.
func (s *Store) SaveWorkflowRun(ctx context.Context, r wftype.WorkflowRun, now *time.Time) error {
	const q = `
UPDATE tasks.workflow_runs
SET status = $2, error = $3, attempt = $4, deadline = $5,
    finished_at = CASE WHEN $2 = 'RUNNING' THEN NULL ELSE coalesce($6::timestamptz, now()) END,
    outputs = $7
WHERE run_id = $1`
	var outputs []byte
	if len(r.Outputs) > 0 {
		outputs = appendJSONValue(nil, r.Outputs)
	}
	_, err := s.db.Exec(ctx, q, r.ID, string(r.Status), r.Error, r.Attempt, r.Deadline, now, outputs)
	return wrap("saving a workflow run", err)
}

// StepTask names the step (and item, -1 for none) a new task belongs to.
type StepTask struct {
	TaskID uuid.UUID
	RunID  uuid.UUID
	Step   string
	Item   int
}

// LinkStepTasks marks tasks just inserted (in the same transaction) as the
// tasks of workflow steps. The tasks are read by primary key, each finding
// its step in $1 (a JSON object keyed by task id), as in finishTasksSQL.
func (s *Store) LinkStepTasks(ctx context.Context, links []StepTask) error {
	if len(links) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(links))
	doc := []byte{'{'}
	for i, l := range links {
		ids[i] = l.TaskID
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = appendQuotedUUID(doc, l.TaskID)
		doc = append(doc, `:{"r":`...)
		doc = appendQuotedUUID(doc, l.RunID)
		doc = append(doc, `,"s":`...)
		doc = appendJSONString(doc, l.Step)
		if l.Item >= 0 {
			doc = append(doc, `,"i":`...)
			doc = strconv.AppendInt(doc, int64(l.Item), 10)
		}
		doc = append(doc, '}')
	}
	doc = append(doc, '}')
	keys, lo, hi := idKeys(ids)
	const q = `
UPDATE tasks.tasks t
SET workflow_run_id = ($1::jsonb -> t.task_id::text ->> 'r')::uuid,
    workflow_step = $1::jsonb -> t.task_id::text ->> 's',
    workflow_item = ($1::jsonb -> t.task_id::text ->> 'i')::int
WHERE t.task_id = ANY (ARRAY(SELECT unnest($2::uuid[])))
  AND t."timestamp" BETWEEN $3 AND $4`
	tag, err := s.db.Exec(ctx, q, doc, keys, lo, hi)
	if err == nil && int(tag.RowsAffected()) != len(links) {
		err = fmt.Errorf("%d of %d tasks found", tag.RowsAffected(), len(links))
	}
	return wrap("linking tasks to workflow steps", err)
}

// StepItem is the outputs of a completed item of a for_each step.
type StepItem struct {
	RunID   uuid.UUID
	Step    string
	Item    int // its index in the step's for_each list
	Outputs json.RawMessage
}

// SaveWorkflowItems keeps the outputs of completed items with their run
// (tasks.workflow_items, migration 027), in the caller's transaction, one
// statement for all: an item kept already (it ran again after a retry of
// its run) keeps its latest outputs. The step gathers them when its last
// item ends (WorkflowItemOutputs), however long after the items' tasks:
// retention may have removed those by then.
func (s *Store) SaveWorkflowItems(ctx context.Context, items []StepItem) error {
	if len(items) == 0 {
		return nil
	}
	type key struct {
		run  uuid.UUID
		step string
		item int
	}
	latest := make(map[key]int, len(items)) // ON CONFLICT changes a row once per statement
	for i, it := range items {
		latest[key{it.RunID, it.Step, it.Item}] = i
	}
	n := len(latest)
	runs, steps := make([][16]byte, 0, n), make([]string, 0, n)
	indexes, outputs := make([]int32, 0, n), make([][]byte, 0, n)
	for i, it := range items {
		if latest[key{it.RunID, it.Step, it.Item}] != i {
			continue
		}
		runs, steps, indexes = append(runs, it.RunID), append(steps, it.Step), append(indexes, int32(it.Item))
		var out []byte
		if len(it.Outputs) > 0 {
			out = appendJSONValue(nil, it.Outputs)
		}
		outputs = append(outputs, out)
	}
	const q = `
INSERT INTO tasks.workflow_items (run_id, step, item, outputs)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::int[], $4::jsonb[])
ON CONFLICT (run_id, step, item) DO UPDATE SET outputs = EXCLUDED.outputs`
	_, err := s.db.Exec(ctx, q, runs, steps, indexes, outputs)
	return wrap("keeping the outputs of a step's items", err)
}

// WorkflowItemOutputs returns the outputs of the completed items of a
// for_each step, by item index: those its run keeps (SaveWorkflowItems),
// else, for an item that completed where they were not kept (before
// migration 027, or on an instance of an earlier version), its task's
// latest completion while its row exists.
func (s *Store) WorkflowItemOutputs(ctx context.Context, run wftype.WorkflowRun, step string) (map[int]json.RawMessage, error) {
	type item struct {
		index   int
		outputs []byte
	}
	// The tasks are found by the partial index on workflow_run_id, in each
	// partition from the run's on (runTasksFrom).
	rows, err := queryAll(ctx, s.db, "reading the outputs of a step's items", `
SELECT item, outputs FROM tasks.workflow_items WHERE run_id = $1 AND step = $2
UNION ALL
(SELECT DISTINCT ON (t.workflow_item) t.workflow_item, t.outputs
 FROM tasks.tasks t
 WHERE t.workflow_run_id = $1 AND t.workflow_step = $2 AND t."timestamp" >= $3 AND t.status = 'COMPLETED'
   AND NOT EXISTS (SELECT 1 FROM tasks.workflow_items i
                   WHERE i.run_id = $1 AND i.step = $2 AND i.item = t.workflow_item)
 ORDER BY t.workflow_item, t.finished_at DESC)`, func(row pgx.Row) (item, error) {
		var it item
		err := row.Scan(&it.index, &it.outputs)
		return it, err
	}, run.ID, step, runTasksFrom(run))
	if err != nil {
		return nil, err
	}
	out := make(map[int]json.RawMessage, len(rows))
	for _, r := range rows {
		out[r.index] = r.outputs
	}
	return out, nil
}

// WorkflowTask is a task of a run, as a run's status shows it.
type WorkflowTask struct {
	TaskID   uuid.UUID
	Step     string
	Item     int // -1 for a step that runs once
	Status   wftype.TaskStatus
	Attempts int
	Error    *string
}

// WorkflowRunTasks lists every task of a run, oldest first.
func (s *Store) WorkflowRunTasks(ctx context.Context, run wftype.WorkflowRun) ([]WorkflowTask, error) {
	return queryAll(ctx, s.db, "reading a workflow run's tasks", `
SELECT task_id, workflow_step, coalesce(workflow_item, -1), status, attempts, error
FROM tasks.tasks
WHERE workflow_run_id = $1 AND "timestamp" >= $2
ORDER BY task_id`, func(row pgx.Row) (WorkflowTask, error) {
		var t WorkflowTask
		var id [16]byte
		var status string
		err := row.Scan(&id, &t.Step, &t.Item, &status, &t.Attempts, &t.Error)
		t.TaskID, t.Status = id, wftype.TaskStatus(status)
		return t, err
	}, run.ID, runTasksFrom(run))
}

// CancelWorkflowTasks cancels the PENDING and ACTIVE tasks of a run (see
// cancelTasksSQL: running ones are told to stop) and returns how many.
func (s *Store) CancelWorkflowTasks(ctx context.Context, run wftype.WorkflowRun) (int, error) {
	ids, err := collectIDs(ctx, s, "reading a workflow run's live tasks", `
SELECT task_id FROM tasks.tasks
WHERE workflow_run_id = $1 AND "timestamp" >= $2 AND status IN ('PENDING', 'ACTIVE')`, run.ID, runTasksFrom(run))
	if err != nil {
		return 0, err
	}
	tasks, err := s.cancelTasks(ctx, ids)
	return len(tasks), err
}

// CancelPendingWorkflowTasks cancels the PENDING tasks of a run that just
// failed, in the caller's transaction (the one that fails the run, holding
// its row), with reason as their error, and returns the step (and item) of
// each.
//
// A PENDING task that another transaction holds at that moment is waited
// for, not skipped: skipped, it would stay PENDING, to be claimed and run
// for a run that failed. The holder is a claim (which never waits for a
// row: it moves the task to ACTIVE, and then the task is left to finish
// like the run's other running tasks, or leaves it PENDING, and then it is
// cancelled here), or a cancel by hand, which takes the row of the task's
// run before the task's (lockRunsOfTasks), so it cannot hold the task
// while waiting for this transaction. The tasks are found through the
// partial index on workflow_run_id, in the partitions from the run's on
// (runTasksFrom), then updated by primary key; the status is tested again
// on the row version the lock was granted on.
func (s *Store) CancelPendingWorkflowTasks(ctx context.Context, run wftype.WorkflowRun, reason string, now *time.Time) ([]StepTask, error) {
	return queryAll(ctx, s.db, "cancelling a failed workflow run's pending tasks", `
UPDATE tasks.tasks t
SET status = 'CANCELLED', finished_at = coalesce($4::timestamptz, now()), locked_until = NULL, error = $3
WHERE t.task_id = ANY (ARRAY(
        SELECT p.task_id FROM tasks.tasks p
        WHERE p.workflow_run_id = $1 AND p."timestamp" >= $2 AND p.status = 'PENDING'
        FOR UPDATE))
  AND t."timestamp" >= $2
  AND (t.status = 'PENDING') IS TRUE
RETURNING t.task_id, t.workflow_step, coalesce(t.workflow_item, -1)`, func(row pgx.Row) (StepTask, error) {
		st := StepTask{RunID: run.ID}
		var id [16]byte
		err := row.Scan(&id, &st.Step, &st.Item)
		st.TaskID = id
		return st, err
	}, run.ID, runTasksFrom(run), reason, now)
}

// GetWorkflowRun reads a run; wftype.ErrNotFound when there is none.
func (s *Store) GetWorkflowRun(ctx context.Context, id uuid.UUID) (wftype.WorkflowRun, error) {
	r, err := scanWorkflowRun(s.db.QueryRow(ctx, `SELECT `+workflowRunColumns+` FROM tasks.workflow_runs WHERE run_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("workflow run %s: %w", id, wftype.ErrNotFound)
	}
	return r, wrap("reading a workflow run", err)
}

// WorkflowSteps reads the steps of a run, by name.
func (s *Store) WorkflowSteps(ctx context.Context, id uuid.UUID) ([]wftype.WorkflowStep, error) {
	return queryAll(ctx, s.db, "reading workflow steps", `
SELECT `+workflowStepColumns+` FROM tasks.workflow_steps WHERE run_id = $1 ORDER BY step`, scanWorkflowStep, id)
}

// WorkflowRunFilter selects runs to list.
type WorkflowRunFilter struct {
	// Schemas, when not nil, limits the runs to these tenants.
	Schemas  []string
	Workflow string
	Status   wftype.RunStatus
	// Before is a keyset cursor: only runs with a smaller id (older).
	Before *uuid.UUID
	Limit  int
}

// ListWorkflowRuns lists runs, newest first.
func (s *Store) ListWorkflowRuns(ctx context.Context, f WorkflowRunFilter) ([]wftype.WorkflowRun, error) {
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	var before *[16]byte
	if f.Before != nil {
		b := [16]byte(*f.Before)
		before = &b
	}
	return queryAll(ctx, s.db, "listing workflow runs", `
SELECT `+workflowRunColumns+` FROM tasks.workflow_runs
WHERE ($1::text[] IS NULL OR schema_name = ANY ($1))
  AND ($2::text = '' OR workflow = $2)
  AND ($3::text = '' OR status = $3)
  AND ($4::uuid IS NULL OR run_id < $4)
ORDER BY run_id DESC
LIMIT $5`, scanWorkflowRun, f.Schemas, f.Workflow, string(f.Status), before, limit)
}

// ExpiredWorkflowRuns lists up to limit RUNNING runs whose deadline passed
// before now (nil: the database clock).
func (s *Store) ExpiredWorkflowRuns(ctx context.Context, now *time.Time, limit int) ([]uuid.UUID, error) {
	return collectIDs(ctx, s, "listing expired workflow runs", `
SELECT run_id FROM tasks.workflow_runs
WHERE status = 'RUNNING' AND deadline < coalesce($1::timestamptz, now())
ORDER BY deadline
LIMIT $2`, now, limit)
}

// workflowRunExpiredSQL: a run retention may delete ($1: cutoff of
// COMPLETED runs, $2: of FAILED ones, $3: of CANCELLED ones). Never a
// RUNNING one.
const workflowRunExpiredSQL = `(
       (r.status = 'COMPLETED' AND r.finished_at < $1)
    OR (r.status = 'FAILED'    AND r.finished_at < $2)
    OR (r.status = 'CANCELLED' AND r.finished_at < $3))`

// DeleteFinishedWorkflowRuns deletes up to limit runs that ended before the
// cutoff of their status (c.Completed, c.Failed, c.Cancelled), with their
// step rows (ON DELETE CASCADE), and returns how many. The candidates come
// from the partial index on finished_at (migration 022), oldest first,
// without the runs that still have a PENDING or ACTIVE task (one left to
// finish when the run failed: found through the partial index on
// workflow_run_id). The expiry test is repeated on the deleted row, so a
// run retried meanwhile (RUNNING again: the retry holds its row, and the
// delete sees the new version) is left. The run's tasks are not deleted
// here: they go with the tasks' own retention.
func (s *Store) DeleteFinishedWorkflowRuns(ctx context.Context, c TaskCutoffs, limit int) (int64, error) {
	const q = `
DELETE FROM tasks.workflow_runs r
WHERE r.run_id = ANY (ARRAY(
        SELECT r.run_id FROM tasks.workflow_runs r
        WHERE r.status <> 'RUNNING' AND r.finished_at < greatest($1::timestamptz, $2::timestamptz, $3::timestamptz)
          AND ` + workflowRunExpiredSQL + `
          AND NOT EXISTS (SELECT 1 FROM tasks.tasks t
                          WHERE t.workflow_run_id = r.run_id AND t.status IN ('PENDING', 'ACTIVE'))
        ORDER BY r.finished_at
        LIMIT $4))
  AND ` + workflowRunExpiredSQL
	tag, err := s.db.Exec(ctx, q, c.Completed, c.Failed, c.Cancelled, limit)
	if err != nil {
		return 0, wrap("deleting finished workflow runs", err)
	}
	return tag.RowsAffected(), nil
}

// runTasksFrom is the earliest creation time a task of run can have: its
// tasks are created after its id, but maybe by an instance whose clock is
// behind, so a day earlier (partitions are months: this prunes as well).
func runTasksFrom(run wftype.WorkflowRun) time.Time { return IDTime(run.ID).Add(-24 * time.Hour) }

// WorkflowRunIDsBetween returns up to limit run ids in [lo, hi], in id
// order (the primary key's range): a prefix of a run id spans such a range,
// as for TaskIDsBetween.
func (s *Store) WorkflowRunIDsBetween(ctx context.Context, lo, hi uuid.UUID, limit int) ([]uuid.UUID, error) {
	const q = `
SELECT run_id FROM tasks.workflow_runs
WHERE run_id BETWEEN $1 AND $2
ORDER BY run_id
LIMIT $3`
	return queryIDs(ctx, s.db, "looking up workflow run ids", q, lo, hi, limit)
}
