package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestQueueDepthReadsPartialIndexes builds 300k finished tasks in older
// partitions and checks that the metrics' queue-depth statement reads the
// partial indexes on live rows, never scanning a partition of finished rows,
// and that the row estimates come from statistics alone.
func TestQueueDepthReadsPartialIndexes(t *testing.T) {
	b := setupFinished(t, 300000)
	batch := make([]store.NewTask, 40)
	for i := range batch {
		batch[i] = newTask("noop")
	}
	batch[0].TaskType = "other"
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	require.Len(t, claimAll(t, b, "noop", 5), 5)
	_, err = b.pool.Exec(b.ctx, `ANALYZE tasks.tasks`)
	require.NoError(t, err)

	depths, err := b.store.QueueDepths(b.ctx, 2*time.Second)
	require.NoError(t, err)
	require.ElementsMatch(t, []store.QueueDepth{
		{TaskType: "noop", Status: wftype.StatusPending, Count: 34},
		{TaskType: "other", Status: wftype.StatusPending, Count: 1},
		{TaskType: "noop", Status: wftype.StatusActive, Count: 5},
	}, depths)

	plan := explainAnalyze(t, b, b.pool, store.QueueDepthSQL())
	// Partition indexes are named after the parent's columns.
	require.Regexp(t, "priority_run_after|execution_mode_schema_name", plan, "PENDING is counted from a claim index")
	require.Contains(t, plan, "locked_until_idx", "ACTIVE is counted from the lease index")
	requireNoFinishedScan(t, b, plan, "queue depth")

	est, err := b.store.EstimateTaskRows(b.ctx)
	require.NoError(t, err)
	require.InDelta(t, 300000, est[wftype.StatusCompleted], 30000, "%v", est)
}
