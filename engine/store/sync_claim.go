package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// claimSyncTaskSQL moves one PENDING task to ACTIVE for owner $3 with a
// lease of $4 seconds, whatever its run_after.
const claimSyncTaskSQL = `
UPDATE tasks.tasks
SET status = 'ACTIVE', owner_id = $3, attempts = attempts + 1,
    started_at = now(), last_heartbeat_at = now(),
    locked_until = now() + make_interval(secs => $4::float8)
WHERE task_id = $1 AND "timestamp" = $2 AND status = 'PENDING'
RETURNING ` + taskColumns

// ClaimSyncTask claims one PENDING task by id for owner. The HTTP API calls
// it inside the transaction that created a SYNCHRONOUS task, so that no
// dispatcher ever sees the task PENDING: the instance serving the request
// runs it in front of its caller. A task that is not PENDING gives
// wftype.ErrConflict; a missing one, wftype.ErrNotFound.
func (s *Store) ClaimSyncTask(ctx context.Context, id uuid.UUID, owner string, lease time.Duration) (wftype.Task, error) {
	t, err := scanTask(s.db.QueryRow(ctx, claimSyncTaskSQL, id, IDTime(id), owner, lease.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, gerr := s.GetTask(ctx, id); gerr != nil {
			return t, gerr
		}
		return t, fmt.Errorf("task %s is not PENDING: %w", id, wftype.ErrConflict)
	}
	return t, wrap(fmt.Sprintf("claiming task %s", id), err)
}
