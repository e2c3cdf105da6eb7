package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/wftype"
)

// The locks on workflow runs: every decision about a run is taken with its
// row locked, and a run's ancestors (the parents of a child run) are locked
// with it, in one statement in id order, since a child's end advances its
// parent in the same transaction (migration 032).

// lockWorkflowRunsSQL locks the runs $1 and their ancestors, in id order,
// and returns them. It runs in every transaction that ends a step task:
// the runs and each ancestor are found by primary key, a run without a
// parent costing one more look-up than before migration 032
// (TestLockWorkflowRunsPlan).
const lockWorkflowRunsSQL = `
WITH RECURSIVE up (run_id, parent_run_id) AS (
    SELECT run_id, parent_run_id FROM tasks.workflow_runs WHERE run_id = ANY ($1::uuid[])
    UNION
    SELECT p.run_id, p.parent_run_id FROM tasks.workflow_runs p JOIN up ON p.run_id = up.parent_run_id
)
SELECT ` + workflowRunColumns + ` FROM tasks.workflow_runs
WHERE run_id = ANY (ARRAY(SELECT run_id FROM up))
ORDER BY run_id
FOR UPDATE`

// LockWorkflowRuns reads the runs among ids with their rows locked until
// the transaction ends (in id order, so two transactions that lock the
// same runs cannot deadlock), and every step of each. The rows of their
// ancestors (the parents of child runs, theirs, ...) are locked in the same
// statement and order, though not returned: a child's end advances its
// parent in the transaction that ends it, and a lock taken later, outside
// that order, could deadlock with a transaction that locks both. It must
// run in a transaction.
func (s *Store) LockWorkflowRuns(ctx context.Context, ids []uuid.UUID) ([]wftype.WorkflowRun, []wftype.WorkflowStep, error) {
	if !s.inTx {
		return nil, nil, errors.New("error locking workflow runs: not in a transaction")
	}
	keys := make([][16]byte, len(ids))
	for i, id := range ids {
		keys[i] = id
	}
	// parent_run_id never changes, so the ancestors are read without
	// locks, then locked with the runs, by primary key.
	locked, err := queryAll(ctx, s.db, "locking workflow runs", lockWorkflowRunsSQL, scanWorkflowRun, keys)
	if err != nil {
		return nil, nil, err
	}
	asked := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	runs := locked[:0]
	for _, r := range locked {
		if asked[r.ID] {
			runs = append(runs, r)
		}
	}
	steps, err := queryAll(ctx, s.db, "reading workflow steps", `
SELECT `+workflowStepColumns+` FROM tasks.workflow_steps
WHERE run_id = ANY ($1::uuid[])
ORDER BY run_id, step`, scanWorkflowStep, keys)
	return runs, steps, err
}

// lockRunsOfTasks locks, in the caller's transaction, the workflow runs
// that tasks among ids (created in [lo, hi], which prunes the partitions)
// belong to, in run order as LockWorkflowRuns does. A cancel by hand takes
// them before it locks the tasks: the run's lock comes first everywhere a
// run's PENDING tasks are locked (CancelPendingWorkflowTasks), so the two
// cannot deadlock.
func (s *Store) lockRunsOfTasks(ctx context.Context, keys [][16]byte, lo, hi time.Time) error {
	// With their ancestors, as LockWorkflowRuns locks them.
	const q = `
WITH RECURSIVE up (run_id, parent_run_id) AS (
    SELECT r.run_id, r.parent_run_id FROM tasks.workflow_runs r
    WHERE r.run_id = ANY (ARRAY(
            SELECT t.workflow_run_id FROM tasks.tasks t
            WHERE t.task_id = ANY (ARRAY(SELECT unnest($1::uuid[])))
              AND t."timestamp" BETWEEN $2 AND $3
              AND t.workflow_run_id IS NOT NULL))
    UNION
    SELECT p.run_id, p.parent_run_id FROM tasks.workflow_runs p JOIN up ON p.run_id = up.parent_run_id
)
SELECT r.run_id FROM tasks.workflow_runs r
WHERE r.run_id = ANY (ARRAY(SELECT run_id FROM up))
ORDER BY r.run_id
FOR UPDATE`
	_, err := s.db.Exec(ctx, q, keys, lo, hi)
	return wrap("locking the workflow runs of tasks", err)
}
