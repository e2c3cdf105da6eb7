package store

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Lease is one task an instance holds and how long to extend it.
type Lease struct {
	ID    uuid.UUID
	Lease time.Duration
	// Attempt, when not zero, is the attempt (the claim) the lease is of:
	// the lease is extended only while the task is still on it, so a run
	// of an earlier claim does not keep a newer claim's lease alive.
	Attempt int
}

// heartbeatSQL extends many leases in one statement. Like finishTasksSQL it
// has no join: the tasks are read by primary key within the range of their
// creation times, the status test cannot pick the partial index on ACTIVE
// rows, and each row finds its lease in $1, a JSON object keyed by task id:
// {"<id>": {"l": lease in seconds, "n": attempt (absent: any)}}.
const heartbeatSQL = `
UPDATE tasks.tasks t
SET locked_until      = coalesce($3::timestamptz, now()) + make_interval(secs => ($1::jsonb -> t.task_id::text ->> 'l')::float8),
    last_heartbeat_at = coalesce($3::timestamptz, now())
WHERE t.task_id = ANY (ARRAY(SELECT unnest($2::uuid[])))
  AND t."timestamp" BETWEEN $5 AND $6
  AND (t.status = 'ACTIVE') IS TRUE AND t.owner_id = $4
  AND (t.attempts = ($1::jsonb -> t.task_id::text ->> 'n')::int OR ($1::jsonb -> t.task_id::text ->> 'n') IS NULL)
RETURNING t.task_id`

// Heartbeat extends the leases of many tasks in one statement and returns the
// ids still held by owner. A task missing from the result lost its lease
// (cancelled, rescued by the janitor, or finished elsewhere): its runner must
// stop and its result be discarded.
func (s *Store) Heartbeat(ctx context.Context, owner string, leases []Lease, now *time.Time) ([]uuid.UUID, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	batch, _ := newKeyedBatch(leases, 64, func(l *Lease) uuid.UUID { return l.ID }, func(doc []byte, l *Lease) ([]byte, error) {
		doc = append(doc, `{"l":`...)
		doc = strconv.AppendFloat(doc, l.Lease.Seconds(), 'f', -1, 64)
		if l.Attempt != 0 {
			doc = append(doc, `,"n":`...)
			doc = strconv.AppendInt(doc, int64(l.Attempt), 10)
		}
		return append(doc, '}'), nil
	})
	var held []uuid.UUID
	err := s.withPlanGuard(ctx, func(db DBTX) (int, error) {
		rows, err := db.Query(ctx, heartbeatSQL, batch.doc, batch.ids, now, owner, batch.lo, batch.hi)
		if err != nil {
			return 0, err
		}
		held, err = scanIDs(rows, len(leases))
		return len(held), err
	})
	return held, wrap("extending leases", err)
}
