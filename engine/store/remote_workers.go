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
	default:
		return fmt.Errorf("task %s is on attempt %d, not %d: %w", id, t.Attempts, l.Attempt, wftype.ErrConflict)
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
// (and attempt $4 unless zero).
const lockActiveTaskSQL = `
SELECT ` + taskColumns + `
FROM tasks.tasks
WHERE task_id = $1 AND "timestamp" = $2
  AND status = 'ACTIVE' AND owner_id = $3 AND ($4::int = 0 OR attempts = $4::int)
FOR UPDATE`

// LockActiveTask reads an ACTIVE task held under lease and locks its row
// until the caller's transaction ends, so the caller can decide the task's
// outcome from the row (retries left, mode) and write it with FinishTasks
// without a race. Errors as SetProgressActive.
func (s *Store) LockActiveTask(ctx context.Context, id uuid.UUID, l WorkerLease) (wftype.Task, error) {
	t, err := scanTask(s.db.QueryRow(ctx, lockActiveTaskSQL, id, IDTime(id), l.Owner, l.Attempt))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, s.leaseConflict(ctx, id, l)
	}
	return t, wrap(fmt.Sprintf("locking task %s", id), err)
}
