package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Lease is one task an instance holds and how long to extend it.
type Lease struct {
	ID    uuid.UUID
	Lease time.Duration
}

// Heartbeat extends the leases of many tasks in one statement and returns the
// ids still held by owner. A task missing from the result lost its lease
// (cancelled, rescued by the janitor, or finished elsewhere): its runner must
// stop and its result be discarded.
func (s *Store) Heartbeat(ctx context.Context, owner string, leases []Lease, now *time.Time) ([]uuid.UUID, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	const q = `
UPDATE tasks.tasks t
SET locked_until      = coalesce($4::timestamptz, now()) + make_interval(secs => h.lease_seconds),
    last_heartbeat_at = coalesce($4::timestamptz, now())
FROM unnest($1::uuid[], $2::timestamptz[], $3::float8[]) AS h(task_id, ts, lease_seconds)
WHERE t.task_id = h.task_id AND t."timestamp" = h.ts
  AND t.status = 'ACTIVE' AND t.owner_id = $5
RETURNING t.task_id`
	ids := make([]uuid.UUID, len(leases))
	ts := make([]time.Time, len(leases))
	secs := make([]float64, len(leases))
	for i, l := range leases {
		ids[i], ts[i], secs[i] = l.ID, IDTime(l.ID), l.Lease.Seconds()
	}
	rows, err := s.db.Query(ctx, q, ids, ts, secs, now, owner)
	if err != nil {
		return nil, wrap("extending leases", err)
	}
	defer rows.Close()
	held := make([]uuid.UUID, 0, len(leases))
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, wrap("extending leases", err)
		}
		held = append(held, id)
	}
	return held, wrap("extending leases", rows.Err())
}
