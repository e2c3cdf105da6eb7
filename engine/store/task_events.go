package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// EventConsumed is the status TaskEvents gives an event no longer in the
// outbox: its subscriptions consumed it (it was deleted on acknowledgement),
// or, after its dead letter's retention, it was purged.
const EventConsumed = "CONSUMED"

// TaskEvent is one event a task emitted, with its status now.
type TaskEvent struct {
	ID        uuid.UUID
	EventType string
	CreatedAt time.Time
	// Status is PENDING, PROCESSING or DEAD_LETTER while the event is in
	// the outbox, else EventConsumed.
	Status string
	// Error is a dead-lettered event's last error.
	Error *string
}

// taskEventsSQL reads a task's record of emitted events (migration 021,
// oldest first) and each event's row where it is still in the outbox: one
// primary-key read of the task, one of the events per entry (at most 50).
// A task that emitted nothing returns one row whose event is NULL; a task
// that does not exist returns no row, so one statement answers both. $1
// task id, $2 its creation time (its partition).
const taskEventsSQL = `
SELECT (x.e ->> 'event_id')::uuid, x.e ->> 'event_type', (x.e ->> 'created_at')::timestamptz,
       coalesce(ev.status, '` + EventConsumed + `'), ev.error
FROM tasks.tasks t
LEFT JOIN LATERAL jsonb_array_elements(coalesce(t.emitted_events, '[]'::jsonb)) WITH ORDINALITY AS x(e, n) ON true
LEFT JOIN tasks.events ev ON ev.event_id = (x.e ->> 'event_id')::uuid AND ev.created_at = (x.e ->> 'created_at')::timestamptz
WHERE t.task_id = $1 AND t."timestamp" = $2
ORDER BY x.n`

// TaskEvents returns the events a task emitted (the last 50, oldest first),
// each with its status now. It fails with wftype.ErrNotFound for a task
// that does not exist.
func (s *Store) TaskEvents(ctx context.Context, id uuid.UUID) ([]TaskEvent, error) {
	return queryOfTask(ctx, s.db, "reading a task's events", taskEventsSQL, id, func(row pgx.Row) (*TaskEvent, error) {
		var id *uuid.UUID
		var e TaskEvent
		var typ *string
		var at *time.Time
		if err := row.Scan(&id, &typ, &at, &e.Status, &e.Error); err != nil || id == nil {
			return nil, err // no event: the task emitted nothing
		}
		e.ID, e.EventType, e.CreatedAt = *id, *typ, at.UTC()
		return &e, nil
	})
}
