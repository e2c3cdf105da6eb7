package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"wf/engine/store"
	"wf/engine/wftype"
)

// TestQueueDepthReadsPartialIndexes builds 300k finished tasks in older
// partitions and checks that the metrics' queue-depth statement reads the
// partial indexes on live rows, never scanning a partition of finished rows,
// and that the row estimates come from statistics alone.
func TestQueueDepthReadsPartialIndexes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 300k rows")
	}
	t.Parallel()
	b := setup(t)
	old := time.Now().UTC().AddDate(0, -3, 0)
	_, err := b.store.EnsurePartitions(b.ctx, old, 3)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, inputs, finished_at)
SELECT tasks.uuid_v7(ts), date_trunc('milliseconds', ts), 'system', 'SYSTEM', 'ASYNCHRONOUS',
       CASE WHEN g % 2 = 0 THEN 'noop' ELSE 'other' END, 'COMPLETED', '{}', ts
FROM generate_series(1, 300000) g,
     LATERAL (SELECT $1::timestamptz + g * interval '15 seconds' AS ts) x`, old)
	require.NoError(t, err)
	batch := make([]store.NewTask, 40)
	for i := range batch {
		batch[i] = newTask("noop")
	}
	batch[0].TaskType = "other"
	_, err = b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	claimed, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w1", Total: 5,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 5, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, 5)
	_, err = b.pool.Exec(b.ctx, `ANALYZE tasks.tasks`)
	require.NoError(t, err)

	depths, err := b.store.QueueDepths(b.ctx, 2*time.Second)
	require.NoError(t, err)
	require.ElementsMatch(t, []store.QueueDepth{
		{TaskType: "noop", Status: wftype.StatusPending, Count: 34},
		{TaskType: "other", Status: wftype.StatusPending, Count: 1},
		{TaskType: "noop", Status: wftype.StatusActive, Count: 5},
	}, depths)

	rows, err := b.pool.Query(b.ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+store.QueueDepthSQL())
	require.NoError(t, err)
	var plan strings.Builder
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan.WriteString(line + "\n")
	}
	require.NoError(t, rows.Err())
	t.Log(plan.String())
	// Partition indexes are named after the parent's columns.
	require.Contains(t, plan.String(), "priority_run_after", "PENDING is counted from the claim index")
	require.Contains(t, plan.String(), "locked_until_idx", "ACTIVE is counted from the lease index")
	for _, p := range partitionsBefore(t, b, time.Now().UTC()) {
		require.NotContains(t, plan.String(), "Seq Scan on "+p+" ", "queue depth must not scan a partition of finished rows")
	}

	est, err := b.store.EstimateTaskRows(b.ctx)
	require.NoError(t, err)
	require.InDelta(t, 300000, est[wftype.StatusCompleted], 30000, "%v", est)
}
