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
}

// heartbeatSQL extends many leases in one statement. Like finishTasksSQL it
// has no join: the tasks are read by primary key within the range of their
// creation times, the status test cannot pick the partial index on ACTIVE
// rows, and each row finds its lease, in seconds, in $1, a JSON object keyed
// by task id.
const heartbeatSQL = `
UPDATE tasks.tasks t
SET locked_until      = coalesce($3::timestamptz, now()) + make_interval(secs => ($1::jsonb ->> t.task_id::text)::float8),
    last_heartbeat_at = coalesce($3::timestamptz, now())
WHERE t.task_id = ANY (ARRAY(SELECT unnest($2::uuid[])))
  AND t."timestamp" BETWEEN $5 AND $6
  AND (t.status = 'ACTIVE') IS TRUE AND t.owner_id = $4
RETURNING t.task_id`

// Heartbeat extends the leases of many tasks in one statement and returns the
// ids still held by owner. A task missing from the result lost its lease
// (cancelled, rescued by the janitor, or finished elsewhere): its runner must
// stop and its result be discarded.
func (s *Store) Heartbeat(ctx context.Context, owner string, leases []Lease, now *time.Time) ([]uuid.UUID, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	ids := make([][16]byte, len(leases))
	doc := make([]byte, 0, 48*len(leases))
	doc = append(doc, '{')
	var lo, hi time.Time
	for i, l := range leases {
		ids[i] = l.ID
		ts := IDTime(l.ID)
		if i == 0 || ts.Before(lo) {
			lo = ts
		}
		if i == 0 || ts.After(hi) {
			hi = ts
		}
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = appendQuotedUUID(doc, l.ID)
		doc = append(doc, ':')
		doc = strconv.AppendFloat(doc, l.Lease.Seconds(), 'f', -1, 64)
	}
	doc = append(doc, '}')
	var held []uuid.UUID
	err := s.withPlanGuard(ctx, func(db DBTX) (int, error) {
		rows, err := db.Query(ctx, heartbeatSQL, doc, ids, now, owner, lo, hi)
		if err != nil {
			return 0, err
		}
		held, err = scanIDs(rows, len(leases))
		return len(held), err
	})
	return held, wrap("extending leases", err)
}
