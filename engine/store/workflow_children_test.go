package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbmigrate"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestMigration032KeepsRunsWrittenBefore: a database at version 31 holds a
// RUNNING run and a FAILED one, written as the previous code did (no
// parent, trigger, start key or outputs); after migration 032 the store
// reads them as runs started by the API, with no parent and no outputs,
// locks and saves them, and a new triggered run can take a start key
// while none of the old runs holds one.
func TestMigration032KeepsRunsWrittenBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, conn, _, _ := dbtest.MigratedBefore(t, ctx, "_workflow_triggers_children.sql")

	running, failed := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err := conn.Exec(ctx, `
INSERT INTO tasks.workflow_runs (run_id, workflow, schema_name, status, inputs, error, created_at, deadline, finished_at)
VALUES ($1, 'old', 'system', 'RUNNING', '{"n": 1}', NULL, now(), now() + interval '1 hour', NULL),
       ($2, 'old', 'system', 'FAILED', '{}', 'step a failed', now(), now() + interval '1 hour', now())`,
		running, failed)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
INSERT INTO tasks.workflow_steps (run_id, step, status, updated_at) VALUES ($1, 'a', 'RUNNING', now()), ($2, 'a', 'FAILED', now())`,
		running, failed)
	require.NoError(t, err)

	_, err = dbmigrate.Up(ctx, conn)
	require.NoError(t, err)

	st := store.New(dbtest.PoolFor(t, url))
	for _, id := range []uuid.UUID{running, failed} {
		r, err := st.GetWorkflowRun(ctx, id)
		require.NoError(t, err)
		require.Nil(t, r.ParentRunID)
		require.Empty(t, r.ParentStep)
		require.Equal(t, -1, r.ParentItem)
		require.Nil(t, r.StartedBy)
		require.Empty(t, r.Outputs)
		kids, err := st.ChildWorkflowRuns(ctx, id)
		require.NoError(t, err)
		require.Empty(t, kids)
	}
	require.NoError(t, st.InTx(ctx, func(tx *store.Store) error {
		runs, steps, err := tx.LockWorkflowRuns(ctx, []uuid.UUID{running})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Len(t, steps, 1)
		r := runs[0]
		r.Status, r.Outputs = wftype.RunCompleted, []byte(`{"done": true}`)
		return tx.SaveWorkflowRun(ctx, r, nil)
	}))
	r, err := st.GetWorkflowRun(ctx, running)
	require.NoError(t, err)
	require.Equal(t, wftype.RunCompleted, r.Status)
	require.JSONEq(t, `{"done": true}`, string(r.Outputs))

	orphans, err := st.RunningChildrenOfEndedRuns(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, orphans)

	// A triggered run takes its start key once.
	tick := time.Now().UTC()
	for i, want := range []error{nil, store.ErrRunExists} {
		id := uuid.Must(uuid.NewV7())
		_, err := st.InsertWorkflowRun(ctx, store.NewWorkflowRun{
			ID: id, Workflow: "old", SchemaName: "system", Inputs: []byte(`{}`), Timeout: time.Hour, Steps: []string{"a"},
			StartedBy: &wftype.RunTrigger{Kind: wftype.TriggerSchedule, Schedule: "s", Tick: &tick}, StartKey: "sched:s:tick",
		})
		if want == nil {
			require.NoError(t, err, "insert %d", i)
			got, err := st.WorkflowRunByStartKey(ctx, "sched:s:tick")
			require.NoError(t, err)
			require.Equal(t, id, got.ID)
			require.Equal(t, "s", got.StartedBy.Schedule)
		} else {
			require.ErrorIs(t, err, want, "insert %d", i)
		}
	}
}

// TestRunningChildrenOfEndedRunsPlan: with 20,000 finished child runs and
// their finished parents, the step pass's look-up of orphaned children
// reads no table sequentially, and finds the one RUNNING child of a
// FAILED parent.
func TestRunningChildrenOfEndedRunsPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	_, err := pool.Exec(ctx, `
INSERT INTO tasks.workflow_runs (run_id, workflow, schema_name, status, inputs, created_at, deadline, finished_at)
SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'parent', 'system', 'COMPLETED', '{}', now(), now(), now()
FROM generate_series(1, 20000) AS i`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
INSERT INTO tasks.workflow_runs (run_id, workflow, schema_name, status, inputs, created_at, deadline, finished_at, parent_run_id, parent_step)
SELECT ('00000000-0000-7000-9000-' || lpad(to_hex(i), 12, '0'))::uuid, 'child', 'system', 'COMPLETED', '{}', now(), now(), now(),
       ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'call'
FROM generate_series(1, 20000) AS i`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
UPDATE tasks.workflow_runs SET status = 'FAILED' WHERE run_id = '00000000-0000-7000-8000-000000000007'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
UPDATE tasks.workflow_runs SET status = 'RUNNING', finished_at = NULL WHERE run_id = '00000000-0000-7000-9000-000000000007'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE tasks.workflow_runs`)
	require.NoError(t, err)

	plan := dbtest.Explain(t, ctx, pool, "ANALYZE, COSTS OFF", store.RunningChildrenOfEndedSQL(), 100)
	require.NotContains(t, plan, "Seq Scan", plan)
	ids, err := store.New(pool).RunningChildrenOfEndedRuns(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{uuid.MustParse("00000000-0000-7000-9000-000000000007")}, ids)
}

// TestLockWorkflowRunsPlan: among 40,000 runs, locking a child run and its
// ancestors (a chain of three) reads every run by primary key, never a
// table sequentially, and locks the three.
func TestLockWorkflowRunsPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	_, err := pool.Exec(ctx, `
INSERT INTO tasks.workflow_runs (run_id, workflow, schema_name, status, inputs, created_at, deadline, parent_run_id, parent_step)
SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'w', 'system', 'RUNNING', '{}', now(), now() + interval '1 hour',
       CASE WHEN i % 2 = 0 THEN ('00000000-0000-7000-8000-' || lpad(to_hex(i - 1), 12, '0'))::uuid END,
       CASE WHEN i % 2 = 0 THEN 'call' END
FROM generate_series(1, 40000) AS i`)
	require.NoError(t, err)
	// 3 → 2 → 1: a grandchild.
	_, err = pool.Exec(ctx, `UPDATE tasks.workflow_runs SET parent_run_id = '00000000-0000-7000-8000-000000000002', parent_step = 'call'
WHERE run_id = '00000000-0000-7000-8000-000000000003'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE tasks.workflow_runs`)
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	grandchild := [][16]byte{uuid.MustParse("00000000-0000-7000-8000-000000000003")}
	plan := dbtest.Explain(t, ctx, tx, "ANALYZE, COSTS OFF", store.LockWorkflowRunsSQL(), grandchild)
	require.NotContains(t, plan, "Seq Scan", plan)
	require.Contains(t, plan, "rows=3 ", plan)
}
