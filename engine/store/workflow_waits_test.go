package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestWaitsDueReadsTheWakeIndex: with 20,000 waiting steps (half asleep,
// half waiting for an event) and a few finished ones, the wait pass's
// statement reads the wake index from both sides of now, a few entries,
// and scans no step sequentially; it finds the due steps and the next
// wake time.
func TestWaitsDueReadsTheWakeIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	_, err := pool.Exec(ctx, `
INSERT INTO tasks.workflow_runs (run_id, workflow, schema_name, status, inputs, created_at, deadline)
SELECT gen_random_uuid(), 'order', 'system', 'RUNNING', '{}', now(), now() + interval '3 days'
FROM generate_series(1, 20000);
INSERT INTO tasks.workflow_steps (run_id, step, status, updated_at, wake_at, wait_event)
SELECT run_id, 'w', CASE WHEN n % 100 = 0 THEN 'COMPLETED' ELSE 'RUNNING' END, now(),
       now() + interval '1 hour' + n * interval '1 second', CASE WHEN n % 2 = 0 THEN 'order.paid' END
FROM (SELECT run_id, row_number() OVER (ORDER BY run_id) AS n FROM tasks.workflow_runs) r;
INSERT INTO tasks.workflow_deliveries (run_id, step, event_id, event_type, schema_name, payload, created_at)
SELECT run_id, 'w', gen_random_uuid(), 'order.paid', 'system', '{}', now() FROM tasks.workflow_runs LIMIT 3;
INSERT INTO tasks.workflow_deliveries (run_id, step, event_id, event_type, schema_name, payload, created_at)
VALUES (gen_random_uuid(), 'w', gen_random_uuid(), 'order.paid', 'system', '{}', now());
ANALYZE tasks.workflow_steps; ANALYZE tasks.workflow_runs`)
	require.NoError(t, err)
	// The database's clock wrote the wake times (now() of the insert,
	// which updated_at holds): the process's may differ (a date sweep).
	var inserted time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT updated_at FROM tasks.workflow_steps LIMIT 1`).Scan(&inserted))
	now := inserted.Add(time.Hour + 10*time.Second + 500*time.Millisecond)
	plan := dbtest.Explain(t, ctx, pool, "ANALYZE, COSTS OFF", store.WorkflowWaitsDueSQL(), []string{"order"}, now, 500)
	require.Contains(t, plan, "workflow_steps_wake_idx")
	require.NotContains(t, plan, "Seq Scan on workflow_steps")
	require.NotContains(t, plan, "Seq Scan on workflow_runs")

	due, err := store.New(pool).WorkflowWaitsDue(ctx, []string{"order"}, now, 500)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(due.Woken), 10, "steps 1 to 10 at least are due")
	require.Less(t, len(due.Woken), 20)
	require.NotNil(t, due.Next)
	require.True(t, due.Next.After(now))
	require.Len(t, due.Delivered, 3)
	require.Len(t, due.Orphans, 1, "a delivery to a run that is gone")
	require.False(t, due.Full)
	part, err := store.New(pool).WorkflowWaitsDue(ctx, []string{"order"}, now, 5)
	require.NoError(t, err)
	require.Len(t, part.Woken, 5)
	require.True(t, part.Full, "a full batch says more may be due")
	none, err := store.New(pool).WorkflowWaitsDue(ctx, []string{"other"}, now, 500)
	require.NoError(t, err)
	require.Empty(t, none.Woken, "only the workflows the instance declares")
}
