package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// EventFilter selects events for ListEvents. Zero fields do not filter.
type EventFilter struct {
	Statuses   []string
	EventTypes []string
	// AfterTime and AfterID are the keyset cursor: events strictly older
	// than this (created_at, event_id).
	AfterTime *time.Time
	AfterID   *uuid.UUID
	Limit     int // default 100, at most 1000
}

// ListEvents returns outbox events newest first, filtered, one page at a time
// (keyset pagination on (created_at, event_id)).
func (s *Store) ListEvents(ctx context.Context, f EventFilter) ([]Event, error) {
	const q = `
SELECT ` + eventColumns + `
FROM tasks.events
WHERE ($1::text[] IS NULL OR status = ANY($1))
  AND ($2::text[] IS NULL OR event_type = ANY($2))
  AND ($3::timestamptz IS NULL OR (created_at, event_id) < ($3, $4::uuid))
ORDER BY created_at DESC, event_id DESC
LIMIT $5`
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	return queryAll(ctx, s.db, "listing events", q, scanEvent, nilIfEmpty(f.Statuses), nilIfEmpty(f.EventTypes), f.AfterTime, f.AfterID, limit)
}
