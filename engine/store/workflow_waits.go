package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// This file holds the statements of workflow steps that wait (migration
// 031): a sleep step's wake time and a waiting step's timeout are wake_at
// (read in order through workflow_steps_wake_idx), and an event is matched
// to the steps waiting for its type by the outbox's insert trigger, which
// records a delivery per waiting step in tasks.workflow_deliveries. None of
// them is read per waiting step: the wait pass reads what is due, and
// nothing while nothing is.

// WaitsDue is what WorkflowWaitsDue found.
type WaitsDue struct {
	// Woken are the runs with a step whose wake_at passed (a sleep that
	// ends, a wait that times out), earliest first.
	Woken []uuid.UUID
	// Delivered are the runs with an event delivered to a waiting step.
	Delivered []uuid.UUID
	// Orphans are deliveries whose run no longer exists.
	Orphans []uuid.UUID
	// Next is the earliest wake_at still to come, nil for none.
	Next *time.Time
	// Full: the due steps or the deliveries filled the batch, so more may
	// be due now.
	Full bool
}

// workflowWaitsDueSQL is WorkflowWaitsDue's statement ($1: the workflows,
// $2: now, $3: the batch). Its plan (TestWaitsDueReadsTheWakeIndex): the
// first two branches read workflow_steps_wake_idx from either side of $2,
// stopping at the batch or the first row, each step's run by primary key;
// the third reads the deliveries, a table that is empty while no event
// waits to be matched, each delivery's run by primary key (a scalar
// subquery, so that the planner never hashes the runs).
const workflowWaitsDueSQL = `
(SELECT 'due' AS what, s.run_id, s.wake_at
 FROM tasks.workflow_steps s JOIN tasks.workflow_runs r ON r.run_id = s.run_id
 WHERE s.status = 'RUNNING' AND s.wake_at <= $2 AND r.workflow = ANY ($1::text[])
 ORDER BY s.wake_at
 LIMIT $3)
UNION ALL
(SELECT 'next', s.run_id, s.wake_at
 FROM tasks.workflow_steps s JOIN tasks.workflow_runs r ON r.run_id = s.run_id
 WHERE s.status = 'RUNNING' AND s.wake_at > $2 AND r.workflow = ANY ($1::text[])
 ORDER BY s.wake_at
 LIMIT 1)
UNION ALL
(SELECT CASE WHEN x.workflow IS NULL THEN 'orphan' ELSE 'event' END, x.run_id, NULL
 FROM (SELECT d.run_id, (SELECT r.workflow FROM tasks.workflow_runs r WHERE r.run_id = d.run_id) AS workflow
       FROM tasks.workflow_deliveries d) x
 WHERE x.workflow IS NULL OR x.workflow = ANY ($1::text[])
 LIMIT $3)`

// WorkflowWaitsDue reads, in one statement, what the wait pass of an
// instance declaring workflows has to do at now: up to limit runs of those
// workflows with a step due to wake (the wake index, in wake order, from
// its start), up to limit runs with events delivered to their waiting
// steps (a delivery whose run is gone counts as an orphan), and the next
// wake time to come (the same index, one row). With nothing due it reads
// one index entry and no delivery: its cost does not grow with the number
// of steps that wait.
func (s *Store) WorkflowWaitsDue(ctx context.Context, workflows []string, now time.Time, limit int) (WaitsDue, error) {

	rows, err := s.db.Query(ctx, workflowWaitsDueSQL, workflows, now, limit)
	if err != nil {
		return WaitsDue{}, wrap("reading the workflow waits that are due", err)
	}
	var due WaitsDue
	seen := map[string]map[uuid.UUID]bool{"due": {}, "event": {}, "orphan": {}}
	rowsOf := map[string]int{}
	var what string
	var id [16]byte
	var at *time.Time
	_, err = pgx.ForEachRow(rows, []any{&what, &id, &at}, func() error {
		if what == "next" {
			u := at.UTC()
			due.Next = &u
			return nil
		}
		rowsOf[what]++
		if seen[what][id] {
			return nil
		}
		seen[what][id] = true
		switch what {
		case "due":
			due.Woken = append(due.Woken, id)
		case "event":
			due.Delivered = append(due.Delivered, id)
		default:
			due.Orphans = append(due.Orphans, id)
		}
		return nil
	})
	due.Full = rowsOf["due"] >= limit || rowsOf["event"]+rowsOf["orphan"] >= limit
	return due, wrap("reading the workflow waits that are due", err)
}

// Delivery is an event delivered to a step waiting for its type.
type Delivery struct {
	RunID      uuid.UUID
	Step       string
	EventID    uuid.UUID
	EventType  string
	SchemaName string
	Payload    json.RawMessage
	CreatedAt  time.Time
}

// WorkflowDeliveries reads the events delivered to the waiting steps of
// runs (their rows locked by the caller), oldest event first.
func (s *Store) WorkflowDeliveries(ctx context.Context, runs []uuid.UUID) ([]Delivery, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	keys := make([][16]byte, len(runs))
	for i, id := range runs {
		keys[i] = id
	}
	return queryAll(ctx, s.db, "reading the events delivered to waiting workflow steps", `
SELECT run_id, step, event_id, event_type, schema_name, payload, created_at
FROM tasks.workflow_deliveries
WHERE run_id = ANY ($1::uuid[])
ORDER BY created_at, event_id`, func(row pgx.Row) (Delivery, error) {
		var d Delivery
		var run, ev [16]byte
		var payload []byte
		err := row.Scan(&run, &d.Step, &ev, &d.EventType, &d.SchemaName, &payload, &d.CreatedAt)
		d.RunID, d.EventID, d.Payload, d.CreatedAt = run, ev, payload, d.CreatedAt.UTC()
		return d, err
	}, keys)
}

// DeleteWorkflowDeliveries deletes deliveries the caller read
// (WorkflowDeliveries, with their runs locked), by key: a delivery written
// meanwhile is left for the next pass.
func (s *Store) DeleteWorkflowDeliveries(ctx context.Context, ds []Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	runs, steps, evs := make([][16]byte, len(ds)), make([]string, len(ds)), make([][16]byte, len(ds))
	for i, d := range ds {
		runs[i], steps[i], evs[i] = d.RunID, d.Step, d.EventID
	}
	_, err := s.db.Exec(ctx, `
DELETE FROM tasks.workflow_deliveries d
USING unnest($1::uuid[], $2::text[], $3::uuid[]) AS k(run_id, step, event_id)
WHERE d.run_id = k.run_id AND d.step = k.step AND d.event_id = k.event_id`, runs, steps, evs)
	return wrap("deleting the events delivered to workflow steps", err)
}

// DeleteOrphanDeliveries deletes the deliveries to runs that no longer
// exist (WaitsDue.Orphans: retention deleted them).
func (s *Store) DeleteOrphanDeliveries(ctx context.Context, runs []uuid.UUID) error {
	if len(runs) == 0 {
		return nil
	}
	keys := make([][16]byte, len(runs))
	for i, id := range runs {
		keys[i] = id
	}
	_, err := s.db.Exec(ctx, `
DELETE FROM tasks.workflow_deliveries d
WHERE d.run_id = ANY ($1::uuid[])
  AND NOT EXISTS (SELECT 1 FROM tasks.workflow_runs r WHERE r.run_id = d.run_id)`, keys)
	return wrap("deleting the events delivered to workflow runs that are gone", err)
}
