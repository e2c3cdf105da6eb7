package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// TaskMatch selects tasks for a bulk cancel or requeue, or their count
// (a dry run).
type TaskMatch struct {
	// Statuses to match; required. A cancel takes PENDING and ACTIVE, a
	// requeue DEAD_LETTER, FAILED and CANCELLED.
	Statuses []wftype.TaskStatus
	// TaskTypes to match; empty matches every type.
	TaskTypes []string
	// SchemaNames are the tenants to match; nil means every tenant, an
	// empty non-nil list none.
	SchemaNames []string
	// CreatedFrom and CreatedTo bound the tasks' creation time, [From, To);
	// nil leaves that side open.
	CreatedFrom, CreatedTo *time.Time
	// Limit is the most tasks changed in one call. Default 1000, at most
	// 10000.
	Limit int
}

func (m TaskMatch) limit() int {
	if m.Limit <= 0 {
		return 1000
	}
	return min(m.Limit, 10000)
}

// where returns the match's condition and arguments, from $1 on. The
// statuses are written as literals (they are checked against the known
// ones): a list of constants lets the planner pick the partial indexes on
// PENDING, ACTIVE and finished rows, which a parameter would not.
func (m TaskMatch) where(allowed ...wftype.TaskStatus) (string, []any, error) {
	if len(m.Statuses) == 0 {
		return "", nil, fmt.Errorf("error matching tasks: no status given: %w", wftype.ErrConflict)
	}
	var lits []string
	for _, st := range m.Statuses {
		if !slices.Contains(allowed, st) {
			return "", nil, fmt.Errorf("error matching tasks: status %s does not apply here (want one of %v): %w", st, allowed, wftype.ErrConflict)
		}
		if lit := "'" + string(st) + "'"; !slices.Contains(lits, lit) {
			lits = append(lits, lit)
		}
	}
	slices.Sort(lits)
	cond := `status IN (` + strings.Join(lits, ", ") + `)
  AND ($1::text[] IS NULL OR cardinality($1::text[]) = 0 OR task_type = ANY($1))
  AND ($2::text[] IS NULL OR schema_name = ANY($2))
  AND ($3::timestamptz IS NULL OR "timestamp" >= $3)
  AND ($4::timestamptz IS NULL OR "timestamp" < $4)`
	return cond, []any{m.TaskTypes, m.SchemaNames, m.CreatedFrom, m.CreatedTo}, nil
}

// selectMatching returns the ids of up to limit+1 matching tasks, oldest
// first.
func (s *Store) selectMatching(ctx context.Context, m TaskMatch, allowed ...wftype.TaskStatus) ([]uuid.UUID, error) {
	cond, args, err := m.where(allowed...)
	if err != nil {
		return nil, err
	}
	q := `SELECT task_id FROM tasks.tasks WHERE ` + cond + ` ORDER BY "timestamp", task_id LIMIT $5`
	return collectIDs(ctx, s, "selecting tasks", q, append(args, m.limit()+1)...)
}

// cancellable and requeueable are the statuses a bulk cancel and a bulk
// requeue apply to.
var (
	cancellable = []wftype.TaskStatus{wftype.StatusPending, wftype.StatusActive}
	requeueable = []wftype.TaskStatus{wftype.StatusDeadLetter, wftype.StatusFailed, wftype.StatusCancelled}
)

// CountTasks counts the tasks m matches, however many (a bulk change's dry
// run). Statuses must all be cancellable (PENDING, ACTIVE) or all
// requeueable (DEAD_LETTER, FAILED, CANCELLED).
func (s *Store) CountTasks(ctx context.Context, m TaskMatch) (int64, error) {
	allowed := cancellable
	if len(m.Statuses) > 0 && slices.Contains(requeueable, m.Statuses[0]) {
		allowed = requeueable
	}
	cond, args, err := m.where(allowed...)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.db.QueryRow(ctx, `SELECT count(*) FROM tasks.tasks WHERE `+cond, args...).Scan(&n)
	return n, wrap("counting tasks", err)
}

// BulkCancel is what one bulk cancel did.
type BulkCancel struct {
	// Cancelled are the tasks now CANCELLED.
	Cancelled int
	// More is true when more tasks match than Limit: call again.
	More bool
}

// CancelTasks cancels up to m.Limit matching PENDING or ACTIVE tasks, oldest
// first, in one statement, as CancelTask does one: running ones are told to
// stop through the status channel. A task that ended in between is left.
func (s *Store) CancelTasks(ctx context.Context, m TaskMatch) (BulkCancel, error) {
	ids, err := s.selectMatching(ctx, m, cancellable...)
	if err != nil {
		return BulkCancel{}, err
	}
	var out BulkCancel
	if len(ids) > m.limit() {
		ids, out.More = ids[:m.limit()], true
	}
	tasks, err := s.cancelTasks(ctx, ids)
	out.Cancelled = len(tasks)
	return out, err
}

// RequeueTasks puts up to m.Limit matching DEAD_LETTER, FAILED or CANCELLED
// tasks back to PENDING, oldest first. Each is requeued by RequeueTask in
// its own statement, so one whose dedup key is now held by a live task is
// skipped without undoing the others.
func (s *Store) RequeueTasks(ctx context.Context, m TaskMatch) (BulkRequeue, error) {
	ids, err := s.selectMatching(ctx, m, requeueable...)
	if err != nil {
		return BulkRequeue{}, err
	}
	return requeueEach(ids, m.limit(), func(id uuid.UUID) error {
		_, err := s.RequeueTask(ctx, id)
		return err
	})
}

// cancelTasksSQL moves the PENDING or ACTIVE tasks among $1 (whose creation
// times lie in [$2, $3], which prunes the partitions) to CANCELLED and
// notifies the status channel with "CANCELLED:<id>" for each, so the
// instance running one stops its runner (at the latest at its next
// heartbeat). The tasks are read by primary key, as in finishTasksSQL.
const cancelTasksSQL = `
WITH cancelled AS (
    UPDATE tasks.tasks t
    SET status = 'CANCELLED', finished_at = now(), locked_until = NULL, error = coalesce(t.error, 'cancelled'),
        -- A running attempt ends here (its runner's outcome will find the
        -- task no longer ACTIVE and write nothing). Unlike a completion's
        -- (migration 024), it is appended: the row's error may be an
        -- earlier attempt's, not this one's 'cancelled'.
        attempt_log = CASE WHEN t.status = 'ACTIVE'
                           THEN tasks.append_attempt(t.attempt_log, t.attempts, t.owner_id, t.started_at, now(), 'CANCELLED', 'cancelled')
                           ELSE t.attempt_log END
    WHERE t.task_id = ANY (ARRAY(SELECT unnest($1::uuid[])))
      AND t."timestamp" BETWEEN $2 AND $3
      AND (t.status IN ('PENDING', 'ACTIVE')) IS TRUE -- by primary key, not a partial index (see finishTasksSQL)
      AND (NOT $5::bool OR t.status = 'PENDING') -- $5: PENDING ones only (a replaced queued task)
    RETURNING ` + taskColumnsT + `, t.workflow_run_id, t.workflow_step, t.workflow_item
),
notified AS (SELECT count(pg_notify($4, 'CANCELLED:' || task_id::text)) AS n FROM cancelled)
SELECT ` + taskColumns + `, workflow_run_id, workflow_step, workflow_item FROM cancelled, notified`

// cancelTasks cancels the PENDING or ACTIVE tasks among ids and returns
// them. With a step hook (WithStepHook), the cancelled tasks of workflow
// steps are handed to it in the same transaction, so a run learns that its
// step cannot complete as the cancel commits; without one, they are
// recorded in it for a step pass (stepEnds).
func (s *Store) cancelTasks(ctx context.Context, ids []uuid.UUID) ([]wftype.Task, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if s.inTx {
		return s.cancelTasksIn(ctx, ids, false)
	}
	return inTxValue(ctx, s, func(tx *Store) ([]wftype.Task, error) { return tx.cancelTasksIn(ctx, ids, false) })
}

// cancelTasksIn is cancelTasks on the store as it is (a transaction when
// it has a step hook); pendingOnly leaves the ACTIVE ones running.
func (s *Store) cancelTasksIn(ctx context.Context, ids []uuid.UUID, pendingOnly bool) ([]wftype.Task, error) {
	keys, lo, hi := idKeys(ids)
	// The runs first, then their tasks: the order of a run's failure. With
	// or without a step hook: without one the cancelled step tasks are
	// recorded (stepEnds), whose key on the run locks it too.
	if err := s.lockRunsOfTasks(ctx, keys, lo, hi); err != nil {
		return nil, err
	}
	type cancelled struct {
		task wftype.Task
		step *FinishedStep
	}
	rows, err := queryAll(ctx, s.db, "cancelling tasks", cancelTasksSQL, func(row pgx.Row) (cancelled, error) {
		var run *[16]byte
		var step *string
		var item *int
		t, err := scanTask(withExtra{row, []any{&run, &step, &item}})
		if err != nil || run == nil {
			return cancelled{task: t}, err
		}
		fs := &FinishedStep{TaskID: t.ID, RunID: *run, Item: -1, Status: wftype.StatusCancelled, Error: t.Error}
		if step != nil {
			fs.Step = *step
		}
		if item != nil {
			fs.Item = *item
		}
		return cancelled{task: t, step: fs}, nil
	}, keys, lo, hi, s.channels.TaskStatusChanged, pendingOnly)
	if err != nil {
		return nil, err
	}
	out := make([]wftype.Task, len(rows))
	var steps []FinishedStep
	for i, r := range rows {
		out[i] = r.task
		if r.step != nil {
			steps = append(steps, *r.step)
		}
	}
	if err := s.stepEnds(ctx, steps); err != nil {
		return nil, err
	}
	return out, nil
}

// withExtra is a row whose scan reads the columns of a scan function
// (scanTask) and then the extra ones after them.
type withExtra struct {
	pgx.Row
	extra []any
}

// Scan implements pgx.Row.
func (r withExtra) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }

// CancelTask moves a PENDING or ACTIVE task to CANCELLED (see
// cancelTasksSQL). A task in another status gives wftype.ErrConflict; a
// missing one, wftype.ErrNotFound.
func (s *Store) CancelTask(ctx context.Context, id uuid.UUID) (wftype.Task, error) {
	tasks, err := s.cancelTasks(ctx, []uuid.UUID{id})
	if err != nil {
		return wftype.Task{}, err
	}
	if len(tasks) == 0 {
		if _, gerr := s.GetTask(ctx, id); gerr != nil {
			return wftype.Task{}, gerr
		}
		return wftype.Task{}, fmt.Errorf("task %s is not PENDING or ACTIVE: %w", id, wftype.ErrConflict)
	}
	return tasks[0], nil
}

// idKeys returns ids as bytes (a uuid.UUID, an encoder of its own, would
// go as text) and their earliest and latest creation times.
func idKeys(ids []uuid.UUID) (keys [][16]byte, lo, hi time.Time) {
	keys = make([][16]byte, len(ids))
	for i, id := range ids {
		keys[i] = id
		ts := IDTime(id)
		if i == 0 || ts.Before(lo) {
			lo = ts
		}
		if i == 0 || ts.After(hi) {
			hi = ts
		}
	}
	return keys, lo, hi
}
