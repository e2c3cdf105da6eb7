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

// DeadLetterPage selects one page of dead letters, newest first. The cursor
// is the (time, id) of the last row of the previous page.
type DeadLetterPage struct {
	AfterTime *time.Time
	AfterID   *uuid.UUID
	Limit     int // default 100, at most 1000
}

func (p DeadLetterPage) limit() int { return pageLimit(p.Limit) }

// ListDeadLetterTasks returns DEAD_LETTER tasks, most recently dead-lettered
// first (keyset pagination on (finished_at, task_id)). It reads the partial
// index on finished rows, never the whole table.
func (s *Store) ListDeadLetterTasks(ctx context.Context, p DeadLetterPage) ([]wftype.Task, error) {
	return listDeadLetters(ctx, s, "tasks", taskColumns, "tasks.tasks", "finished_at", "task_id", scanTask, p)
}

// ListDeadLetterEvents returns DEAD_LETTER events, most recently
// dead-lettered first (keyset pagination on (dead_lettered_at, event_id)),
// from the partial index on dead letters.
func (s *Store) ListDeadLetterEvents(ctx context.Context, p DeadLetterPage) ([]Event, error) {
	return listDeadLetters(ctx, s, "events", eventColumns, "tasks.events", "dead_lettered_at", "event_id", scanEvent, p)
}

// listDeadLetters returns page p of the DEAD_LETTER rows of table (its
// columns, scanned with scan), newest first: keyset pagination on
// (at, id); what names the rows in errors.
func listDeadLetters[T any](ctx context.Context, s *Store, what, columns, table, at, id string, scan func(pgx.Row) (T, error), p DeadLetterPage) ([]T, error) {
	q := `
SELECT ` + columns + `
FROM ` + table + `
WHERE status = 'DEAD_LETTER'
  AND ($1::timestamptz IS NULL OR (` + at + `, ` + id + `) < ($1, $2::uuid))
ORDER BY ` + at + ` DESC, ` + id + ` DESC
LIMIT $3`
	return queryAll(ctx, s.db, "listing dead-letter "+what, q, scan, p.AfterTime, p.AfterID, p.limit())
}

// GetEvent returns one event by id; the id's embedded time prunes the look-up
// to one partition.
func (s *Store) GetEvent(ctx context.Context, id uuid.UUID) (Event, error) {
	const q = `SELECT ` + eventColumns + ` FROM tasks.events WHERE event_id = $1 AND created_at = $2`
	e, err := scanEvent(s.db.QueryRow(ctx, q, id, IDTime(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, fmt.Errorf("event %s: %w", id, wftype.ErrNotFound)
	}
	return e, wrap("reading event", err)
}

// requeueEventSQL puts a DEAD_LETTER event back to PENDING with its attempts
// reset, and takes its dedup key back in tasks.event_dedup (the
// dead-lettering released it). When another live event now holds the key the
// event stays DEAD_LETTER and nothing is returned.
const requeueEventSQL = `
WITH input AS (
    SELECT event_id, created_at, schema_name, dedup_key
    FROM tasks.events
    WHERE event_id = $1 AND created_at = $2 AND status = 'DEAD_LETTER'
    FOR UPDATE
),
key AS ` + takeEventKeysSQL + `,
requeued AS (
    UPDATE tasks.events e
    SET status = 'PENDING', attempts = 0, run_after = now(), locked_until = NULL, owner_id = NULL,
        error = NULL, dead_lettered_at = NULL
    FROM input t
    WHERE e.event_id = t.event_id AND e.created_at = t.created_at
      AND (t.dedup_key IS NULL OR EXISTS (SELECT 1 FROM key)
           OR EXISTS (SELECT 1 FROM tasks.event_dedup d
                      WHERE d.schema_name = t.schema_name AND d.dedup_key = t.dedup_key AND d.event_id = t.event_id))
    RETURNING e.event_id, e.created_at, e.event_type, e.scope, e.schema_name, e.payload, e.status, e.dedup_key,
              e.attempts, e.run_after, e.locked_until, e.owner_id, e.error, e.dead_lettered_at, coalesce(e.traceparent, '') AS traceparent
),
notified AS (SELECT count(pg_notify($3, event_type)) AS n FROM requeued)
SELECT r.* FROM requeued r, notified`

// RequeueEvent puts a DEAD_LETTER event back to PENDING (attempts reset) and
// wakes the consumers. It fails with wftype.ErrNotFound for a missing event
// and wftype.ErrConflict when the event is not DEAD_LETTER or another live
// event holds its dedup key.
func (s *Store) RequeueEvent(ctx context.Context, id uuid.UUID) (Event, error) {
	e, err := scanEvent(s.db.QueryRow(ctx, requeueEventSQL, id, IDTime(id), s.channels.Events))
	if errors.Is(err, pgx.ErrNoRows) {
		cur, gerr := s.GetEvent(ctx, id)
		if gerr != nil {
			return e, gerr
		}
		if cur.Status != EventDeadLetter {
			return e, fmt.Errorf("event %s is %s, not DEAD_LETTER: %w", id, cur.Status, wftype.ErrConflict)
		}
		return e, fmt.Errorf("event %s: another live event holds its dedup key: %w", id, wftype.ErrConflict)
	}
	return e, wrap("requeueing event", err)
}
