package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The statement of the generic worker (`wf exec`) that Heartbeat, which
// serves a whole instance, does not cover.

// extendLeaseSQL extends the lease of one task while it is ACTIVE under
// owner $3 and, unless $6 is zero, at attempt $6.
const extendLeaseSQL = `
UPDATE tasks.tasks
SET locked_until      = coalesce($5::timestamptz, now()) + make_interval(secs => $4::float8),
    last_heartbeat_at = coalesce($5::timestamptz, now())
WHERE task_id = $1 AND "timestamp" = $2
  AND status = 'ACTIVE' AND owner_id = $3 AND ($6::int = 0 OR attempts = $6::int)
RETURNING true`

// ExtendLease extends the lease of task id by length while it is ACTIVE
// under lease, and reports whether it still is. Unlike Heartbeat it checks
// the attempt too, so a worker of an earlier claim by the same owner learns
// at its next beat that the task moved on, and does not keep the later
// claim's lease alive.
func (s *Store) ExtendLease(ctx context.Context, id uuid.UUID, lease WorkerLease, length time.Duration, now *time.Time) (bool, error) {
	var held bool
	err := s.db.QueryRow(ctx, extendLeaseSQL, id, IDTime(id), lease.Owner, length.Seconds(), now, lease.Attempt).Scan(&held)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return held, wrap("extending the lease of task "+id.String(), err)
}
