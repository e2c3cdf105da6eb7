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
// to PENDING, oldest dead letter first. The matches are read from the
// partial index on finished rows; each is requeued by RequeueTask in its own
// statement, so one whose dedup key is now held by a live task is skipped
// without undoing the others.
func (s *Store) RequeueDeadLetterTasks(ctx context.Context, f DeadLetterFilter) (BulkRequeue, error) {
	const q = `
SELECT task_id FROM tasks.tasks
WHERE status = 'DEAD_LETTER'
  AND ($1::text[] IS NULL OR cardinality($1::text[]) = 0 OR task_type = ANY($1))
  AND ($2::text[] IS NULL OR schema_name = ANY($2))
ORDER BY finished_at, task_id
LIMIT $3`
	ids, err := collectIDs(ctx, s, "selecting dead-letter tasks to requeue", q, f.TaskTypes, f.SchemaNames, f.limit()+1)
	if err != nil {
		return BulkRequeue{}, err
	}
	return requeueEach(ids, f.limit(), func(id uuid.UUID) error {
		_, err := s.RequeueTask(ctx, id)
		return err
	})
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
