package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// The statements behind the HTTP API's remote-worker endpoints (the seed's
// update_task): writes that apply only while the task is ACTIVE under the
// worker's lease.

// WorkerLease is the claim a remote worker acts under when it reports on a
// task over HTTP: the owner_id of the instance that claimed the task (the
// worker is handed it with the task) and, optionally, the attempt number, so
// a worker of an earlier attempt by the same instance cannot write over the
// current one.
type WorkerLease struct {
	Owner string
	// Attempt, when not zero, must equal the task's attempts.
	Attempt int
	// Remote, when set, also requires the claim to be one the dispatcher
	// handed to a remote runner (MarkRemoteRun): a task the local
	// dispatcher runs is not a remote worker's to finish.
	Remote bool
}

// leaseConflict explains why a lease-checked statement matched nothing: the
// task does not exist (ErrNotFound), or it is not ACTIVE under this lease
// (ErrConflict).
func (s *Store) leaseConflict(ctx context.Context, id uuid.UUID, l WorkerLease) error {
	t, err := s.GetTask(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case t.Status != wftype.StatusActive:
		return fmt.Errorf("task %s is %s, not ACTIVE: %w", id, t.Status, wftype.ErrConflict)
	case t.OwnerID == nil || *t.OwnerID != l.Owner:
		return fmt.Errorf("task %s is not held by owner %q: %w", id, l.Owner, wftype.ErrConflict)
	case l.Attempt != 0 && t.Attempts != l.Attempt:
		return fmt.Errorf("task %s is on attempt %d, not %d: %w", id, t.Attempts, l.Attempt, wftype.ErrConflict)
	default:
		return fmt.Errorf("task %s is not a remote run: the instance that claimed it runs it, and only it records the outcome: %w", id, wftype.ErrConflict)
	}
}

// setProgressActiveSQL merges $3 into the progress of task $1 if it is
// ACTIVE under owner $4 (and attempt $5 unless zero).
const setProgressActiveSQL = `
UPDATE tasks.tasks
SET progress = coalesce(progress, '{}'::jsonb) || $3::jsonb
WHERE task_id = $1 AND "timestamp" = $2
  AND status = 'ACTIVE' AND owner_id = $4 AND ($5::int = 0 OR attempts = $5::int)
RETURNING ` + taskColumns

// SetProgressActive merges progress (a JSON object) into the progress of an
// ACTIVE task held under lease, and returns the task. A task that is not
// ACTIVE, or held by another owner or attempt, is left unchanged
// (wftype.ErrConflict); a missing one gives wftype.ErrNotFound.
func (s *Store) SetProgressActive(ctx context.Context, id uuid.UUID, l WorkerLease, progress json.RawMessage) (wftype.Task, error) {
	t, err := scanTask(s.db.QueryRow(ctx, setProgressActiveSQL, id, IDTime(id), string(progress), l.Owner, l.Attempt))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, s.leaseConflict(ctx, id, l)
	}
	return t, wrap(fmt.Sprintf("setting the progress of task %s", id), err)
}

// lockActiveTaskSQL reads and locks task $1 if it is ACTIVE under owner $3
// (and attempt $4 unless zero), and, when $5, under a claim handed to a
// remote runner (its row in tasks.remote_runs names this very claim). The
// task's workflow run, if it has one, is locked first, in the same
// statement: run_locked is an InitPlan, evaluated before the scan hands a
// row to be locked.
const lockActiveTaskSQL = `
WITH run_locked AS (
    SELECT r.run_id FROM tasks.workflow_runs r
    WHERE r.run_id = (SELECT w.workflow_run_id FROM tasks.tasks w WHERE w.task_id = $1 AND w."timestamp" = $2)
    FOR UPDATE
)
SELECT ` + taskColumns + `
FROM tasks.tasks t
WHERE (SELECT count(*) FROM run_locked) >= 0
  AND task_id = $1 AND "timestamp" = $2
  AND status = 'ACTIVE' AND owner_id = $3 AND ($4::int = 0 OR attempts = $4::int)
  AND (NOT $5::bool OR EXISTS (
        SELECT 1 FROM tasks.remote_runs r
        WHERE r.task_id = t.task_id AND r.owner_id = t.owner_id
          AND r.attempt = t.attempts AND r.started_at = t.started_at))
FOR UPDATE OF t`

// LockActiveTask reads an ACTIVE task held under lease and locks its row
// until the caller's transaction ends, so the caller can decide the task's
// outcome from the row (retries left, mode) and write it with FinishTasks
// without a race. The task's workflow run, if it has one, is locked first,
// in the same statement: the order of a run's failure and of a cancel by
// hand, which lock the run and then its tasks (the other order deadlocks
// with them). Errors as
// SetProgressActive.
func (s *Store) LockActiveTask(ctx context.Context, id uuid.UUID, l WorkerLease) (wftype.Task, error) {
	t, err := scanTask(s.db.QueryRow(ctx, lockActiveTaskSQL, id, IDTime(id), l.Owner, l.Attempt, l.Remote))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, s.leaseConflict(ctx, id, l)
	}
	return t, wrap(fmt.Sprintf("locking task %s", id), err)
}

// markRemoteRunSQL records the current claim of task $1 — ACTIVE under
// owner $3 at attempt $4 — as handed to a remote runner.
const markRemoteRunSQL = `
INSERT INTO tasks.remote_runs (task_id, "timestamp", owner_id, attempt, started_at)
SELECT task_id, "timestamp", owner_id, attempts, started_at
FROM tasks.tasks
WHERE task_id = $1 AND "timestamp" = $2
  AND status = 'ACTIVE' AND owner_id = $3 AND attempts = $4 AND started_at IS NOT NULL
ON CONFLICT (task_id) DO UPDATE
SET "timestamp" = excluded."timestamp", owner_id = excluded.owner_id,
    attempt = excluded.attempt, started_at = excluded.started_at`

// MarkRemoteRun records that the claim of task id under lease (owner and
// attempt, both required) is handed to a remote runner: a worker reporting
// under that claim over HTTP may then complete or fail it (LockActiveTask
// with WorkerLease.Remote). A task no longer ACTIVE under lease gives an
// error wrapping wftype.ErrConflict or wftype.ErrNotFound.
func (s *Store) MarkRemoteRun(ctx context.Context, id uuid.UUID, l WorkerLease) error {
	tag, err := s.db.Exec(ctx, markRemoteRunSQL, id, IDTime(id), l.Owner, l.Attempt)
	if err != nil {
		return wrap(fmt.Sprintf("recording the remote run of task %s", id), err)
	}
	if tag.RowsAffected() == 0 {
		return s.leaseConflict(ctx, id, l)
	}
	return nil
}

// forgetRemoteRunSQL removes the record of task $1's remote run.
const forgetRemoteRunSQL = `DELETE FROM tasks.remote_runs WHERE task_id = $1`

// ForgetRemoteRun removes the record of task id's remote run, once its
// worker finished it.
func (s *Store) ForgetRemoteRun(ctx context.Context, id uuid.UUID) error {
	_, err := s.db.Exec(ctx, forgetRemoteRunSQL, id)
	return wrap(fmt.Sprintf("forgetting the remote run of task %s", id), err)
}

// purgeRemoteRunsSQL removes the records of remote runs whose claim ended:
// the task is no longer ACTIVE under that claim (or is gone). The table
// holds a row per running remote task, so the scan is small; each row
// probes its task by primary key.
const purgeRemoteRunsSQL = `
DELETE FROM tasks.remote_runs r
WHERE NOT EXISTS (
    SELECT 1 FROM tasks.tasks t
    WHERE t.task_id = r.task_id AND t."timestamp" = r."timestamp"
      AND t.status = 'ACTIVE' AND t.owner_id = r.owner_id
      AND t.attempts = r.attempt AND t.started_at = r.started_at)`

// PurgeRemoteRuns removes the records of remote runs whose claim ended
// (maintenance) and returns how many.
func (s *Store) PurgeRemoteRuns(ctx context.Context) (int64, error) {
	tag, err := s.db.Exec(ctx, purgeRemoteRunsSQL)
	if err != nil {
		return 0, wrap("purging ended remote runs", err)
	}
	return tag.RowsAffected(), nil
}
