package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"wf/engine/wftype"
)

// Finish is the outcome of one task run (or of a janitor decision).
type Finish struct {
	ID     uuid.UUID
	Status wftype.TaskStatus // COMPLETED, FAILED, DEAD_LETTER, or PENDING for a retry
	// Outputs replace the task's outputs when not nil.
	Outputs json.RawMessage
	// Error is the failure message (nil on success).
	Error *string
	// RetryCount is the task's retry count after this outcome.
	RetryCount int
	// RunAfter is when a retried task becomes due again (PENDING only).
	RunAfter *time.Time
}

// FinishParams qualifies which rows a FinishTasks call may change.
type FinishParams struct {
	// Owner, when set, limits changes to tasks that instance still holds:
	// a task whose lease was taken away keeps its new owner's result.
	Owner string
	// ExpiredBefore, when set, limits changes to tasks whose lease ended
	// before it (the janitor's rescue).
	ExpiredBefore *time.Time
	Now           *time.Time // nil: the database clock
}

// finishTasksSQL applies many outcomes in one statement. Only ACTIVE rows
// change; FAILED and DEAD_LETTER outcomes write task.failed /
// task.dead_lettered events to the outbox in the same statement (so in the
// same transaction). Retried tasks notify the queued channel; terminal ones
// the status channel.
const finishTasksSQL = `
WITH f AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::jsonb[], $5::text[], $6::int[],
                         $7::timestamptz[], $8::uuid[], $9::timestamptz[])
        AS f(task_id, ts, status, outputs, error, retry_count, run_after, event_id, event_ts)
),
updated AS (
    UPDATE tasks.tasks t
    SET status       = f.status,
        outputs      = coalesce(f.outputs, t.outputs),
        error        = f.error,
        retry_count  = f.retry_count,
        run_after    = coalesce(f.run_after, t.run_after),
        locked_until = NULL,
        owner_id     = CASE WHEN f.status = 'PENDING' THEN NULL ELSE t.owner_id END,
        finished_at  = CASE WHEN f.status = 'PENDING' THEN NULL ELSE coalesce($10::timestamptz, now()) END
    FROM f
    WHERE t.task_id = f.task_id AND t."timestamp" = f.ts
      AND t.status = 'ACTIVE'
      AND ($11::text IS NULL OR t.owner_id = $11)
      AND ($12::timestamptz IS NULL OR t.locked_until < $12)
    RETURNING t.task_id, t.task_type, t.schema_name, t.status, t.error, t.retry_count, t.max_retries, t.attempts,
              f.event_id, f.event_ts
),
events AS (
    INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, payload)
    SELECT u.event_id, u.event_ts,
           CASE u.status WHEN 'FAILED' THEN 'task.failed' ELSE 'task.dead_lettered' END,
           CASE WHEN u.schema_name = 'system' THEN 'PLATFORM' ELSE 'CATALOG' END,
           u.schema_name,
           jsonb_build_object('task_id', u.task_id, 'task_type', u.task_type, 'status', u.status,
                              'error', u.error, 'retry_count', u.retry_count, 'attempts', u.attempts)
    FROM updated u
    WHERE u.status IN ('FAILED', 'DEAD_LETTER') AND u.event_id IS NOT NULL
    RETURNING event_id
),
notified AS (
    SELECT count(pg_notify($13, q.task_type)) AS n
    FROM (SELECT DISTINCT task_type FROM updated WHERE status = 'PENDING') q
),
event_notified AS (
    SELECT count(pg_notify($14, 'task_events')) AS n FROM (SELECT 1 FROM events LIMIT 1) q
)
SELECT u.task_id FROM updated u, notified, event_notified`

// FinishTasks applies outcomes in one statement and returns the ids that
// changed; an id missing from the result was not ACTIVE (or not the owner's,
// or its lease had not expired) and is left as it was.
func (s *Store) FinishTasks(ctx context.Context, p FinishParams, outcomes []Finish) ([]uuid.UUID, error) {
	if len(outcomes) == 0 {
		return nil, nil
	}
	n := len(outcomes)
	ids := make([]uuid.UUID, n)
	ts := make([]time.Time, n)
	statuses := make([]string, n)
	outputs := make([][]byte, n)
	errs := make([]*string, n)
	retries := make([]int32, n)
	runAfter := make([]*time.Time, n)
	eventIDs := make([]*uuid.UUID, n)
	eventTs := make([]*time.Time, n)
	for i, o := range outcomes {
		ids[i], ts[i], statuses[i] = o.ID, IDTime(o.ID), string(o.Status)
		if o.Outputs != nil {
			outputs[i] = o.Outputs
		}
		errs[i], retries[i], runAfter[i] = o.Error, int32(o.RetryCount), o.RunAfter
		if o.Status == wftype.StatusFailed || o.Status == wftype.StatusDeadLetter {
			id, at, err := NewID()
			if err != nil {
				return nil, err
			}
			eventIDs[i], eventTs[i] = &id, &at
		}
	}
	var owner *string
	if p.Owner != "" {
		owner = &p.Owner
	}
	rows, err := s.db.Query(ctx, finishTasksSQL, ids, ts, statuses, outputs, errs, retries, runAfter, eventIDs, eventTs,
		p.Now, owner, p.ExpiredBefore, s.channels.TaskQueued, s.channels.Events)
	if err != nil {
		return nil, wrap("finishing tasks", err)
	}
	defer rows.Close()
	done := make([]uuid.UUID, 0, n)
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, wrap("finishing tasks", err)
		}
		done = append(done, id)
	}
	return done, wrap("finishing tasks", rows.Err())
}

// ReleaseTasks hands ACTIVE tasks the owner still holds back to PENDING at
// once (shutdown): no lease wait, no retry counted, the attempt not counted.
func (s *Store) ReleaseTasks(ctx context.Context, owner string, ids []uuid.UUID) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	const q = `
WITH released AS (
    UPDATE tasks.tasks t
    SET status = 'PENDING', owner_id = NULL, locked_until = NULL, started_at = NULL,
        attempts = greatest(t.attempts - 1, 0), run_after = now()
    FROM unnest($1::uuid[], $2::timestamptz[]) AS r(task_id, ts)
    WHERE t.task_id = r.task_id AND t."timestamp" = r.ts AND t.status = 'ACTIVE' AND t.owner_id = $3
    RETURNING t.task_id, t.task_type
),
notified AS (SELECT count(pg_notify($4, q.task_type)) AS n FROM (SELECT DISTINCT task_type FROM released) q)
SELECT task_id FROM released, notified`
	ts := make([]time.Time, len(ids))
	for i, id := range ids {
		ts[i] = IDTime(id)
	}
	rows, err := s.db.Query(ctx, q, ids, ts, owner, s.channels.TaskQueued)
	if err != nil {
		return nil, wrap("releasing tasks", err)
	}
	defer rows.Close()
	var out []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, wrap("releasing tasks", err)
		}
		out = append(out, id)
	}
	return out, wrap("releasing tasks", rows.Err())
}
