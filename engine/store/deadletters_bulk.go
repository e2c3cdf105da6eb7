package store

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/wfhq/wf/wftype"
)

// DeadLetterFilter selects dead letters for a bulk requeue. Empty lists
// match everything.
type DeadLetterFilter struct {
	// TaskTypes (tasks) or EventTypes (events) to match.
	TaskTypes  []string
	EventTypes []string
	// SchemaNames are the tenants to match; nil means every tenant, an
	// empty non-nil list none.
	SchemaNames []string
	// Limit is the most dead letters requeued in one call. Default 1000, at
	// most 10000.
	Limit int
}

func (f DeadLetterFilter) limit() int {
	if f.Limit <= 0 {
		return 1000
	}
	return min(f.Limit, 10000)
}

// BulkRequeue is what one bulk requeue did.
type BulkRequeue struct {
	// Requeued are the dead letters now PENDING.
	Requeued int
	// Skipped are the matched dead letters left as they were because another
	// live task or event holds their dedup key (or they changed meanwhile).
	Skipped int
	// More is true when more dead letters match than Limit: call again.
	More bool
}

// RequeueDeadLetterTasks puts up to f.Limit matching DEAD_LETTER tasks back
// to PENDING, oldest first: RequeueTasks of the DEAD_LETTER status.
func (s *Store) RequeueDeadLetterTasks(ctx context.Context, f DeadLetterFilter) (BulkRequeue, error) {
	return s.RequeueTasks(ctx, TaskMatch{Statuses: []wftype.TaskStatus{wftype.StatusDeadLetter},
		TaskTypes: f.TaskTypes, SchemaNames: f.SchemaNames, Limit: f.Limit})
}

// RequeueDeadLetterEvents puts up to f.Limit matching DEAD_LETTER events back
// to PENDING, as RequeueDeadLetterTasks does for tasks.
func (s *Store) RequeueDeadLetterEvents(ctx context.Context, f DeadLetterFilter) (BulkRequeue, error) {
	const q = `
SELECT event_id FROM tasks.events
WHERE status = 'DEAD_LETTER'
  AND ($1::text[] IS NULL OR cardinality($1::text[]) = 0 OR event_type = ANY($1))
  AND ($2::text[] IS NULL OR schema_name = ANY($2))
ORDER BY dead_lettered_at, event_id
LIMIT $3`
	ids, err := collectIDs(ctx, s, "selecting dead-letter events to requeue", q, f.EventTypes, f.SchemaNames, f.limit()+1)
	if err != nil {
		return BulkRequeue{}, err
	}
	return requeueEach(ids, f.limit(), func(id uuid.UUID) error {
		_, err := s.RequeueEvent(ctx, id)
		return err
	})
}

// CountDeadLetters counts the dead letters f matches (a bulk requeue's dry
// run): tasks, or events when events is true.
func (s *Store) CountDeadLetters(ctx context.Context, f DeadLetterFilter, events bool) (int64, error) {
	if !events {
		return s.CountTasks(ctx, TaskMatch{Statuses: []wftype.TaskStatus{wftype.StatusDeadLetter},
			TaskTypes: f.TaskTypes, SchemaNames: f.SchemaNames})
	}
	const q = `
SELECT count(*) FROM tasks.events
WHERE status = 'DEAD_LETTER'
  AND ($1::text[] IS NULL OR cardinality($1::text[]) = 0 OR event_type = ANY($1))
  AND ($2::text[] IS NULL OR schema_name = ANY($2))`
	var n int64
	err := s.db.QueryRow(ctx, q, f.EventTypes, f.SchemaNames).Scan(&n)
	return n, wrap("counting dead-letter events", err)
}

// requeueEach requeues the first limit of ids one by one, each in its own
// statement: one that a live task or event now blocks (or that changed) is
// counted as skipped; more tells whether ids held more than limit.
func requeueEach(ids []uuid.UUID, limit int, requeue func(uuid.UUID) error) (BulkRequeue, error) {
	var out BulkRequeue
	if len(ids) > limit {
		ids, out.More = ids[:limit], true
	}
	for _, id := range ids {
		if err := requeue(id); err != nil {
			if errors.Is(err, wftype.ErrConflict) || errors.Is(err, wftype.ErrNotFound) {
				out.Skipped++
				continue
			}
			return out, err
		}
		out.Requeued++
	}
	return out, nil
}
