package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// EventIDsBetween returns up to limit event ids in [lo, hi], in id order:
// a prefix of an event id spans such a range, as for TaskIDsBetween. An
// event's created_at is the time in its id, so the times inside lo and hi
// bound it and only the partitions they span are read.
func (s *Store) EventIDsBetween(ctx context.Context, lo, hi uuid.UUID, limit int) ([]uuid.UUID, error) {
	const q = `
SELECT event_id
FROM tasks.events
WHERE event_id BETWEEN $1 AND $2
  AND created_at BETWEEN $3 AND $4
ORDER BY event_id
LIMIT $5`
	return queryIDs(ctx, s.db, "looking up event ids", q, lo, hi, IDTime(lo), IDTime(hi), limit)
}

// WebhookSubscriberIDsBetween returns up to limit subscriber ids in
// [lo, hi], in id order (the primary key's range), as for TaskIDsBetween.
func (s *Store) WebhookSubscriberIDsBetween(ctx context.Context, lo, hi uuid.UUID, limit int) ([]uuid.UUID, error) {
	const q = `
SELECT subscriber_id
FROM tasks.webhook_subscribers
WHERE subscriber_id BETWEEN $1 AND $2
ORDER BY subscriber_id
LIMIT $3`
	return queryIDs(ctx, s.db, "looking up webhook subscriber ids", q, lo, hi, limit)
}

// queryIDs runs q, which selects one uuid column, and returns the ids it
// selects (empty, not nil, for none); doing names the work in errors.
func queryIDs(ctx context.Context, db DBTX, doing, q string, args ...any) ([]uuid.UUID, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, wrap(doing, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, wrap(doing, err)
}
