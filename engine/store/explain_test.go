package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"wf/engine/store"
)

// TestClaimUsesPartialIndex builds 1M finished tasks in older partitions and
// checks that the claim statement reads the partial index on PENDING rows and
// never scans a partition sequentially.
func TestClaimUsesPartialIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 1M rows")
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
FROM generate_series(1, 1000000) g,
     LATERAL (SELECT $1::timestamptz + g * interval '5 seconds' AS ts) x`, old)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `ANALYZE tasks.tasks`)
	require.NoError(t, err)
	batch := make([]store.NewTask, 50)
	for i := range batch {
		batch[i] = newTask("noop")
	}
	_, err = b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)

	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx) //nolint:errcheck
	rows, err := tx.Query(b.ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+store.ClaimSQL(),
		[]string{"ASYNCHRONOUS"}, []string{"noop"}, []int32{100}, []float64{60}, 100, nil, "w1")
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
	require.Contains(t, plan.String(), "priority_run_after")
	require.Contains(t, plan.String(), "rows=50 ")
	for _, p := range partitionsBefore(t, b, time.Now().UTC()) {
		require.NotContains(t, plan.String(), "Seq Scan on "+p+" ", "the claim must not scan a partition of finished rows")
	}
}

// partitionsBefore names the task partitions of the months before now's.
func partitionsBefore(t *testing.T, b *bundle, now time.Time) []string {
	t.Helper()
	parts, err := b.store.ListPartitions(b.ctx, "tasks.tasks")
	require.NoError(t, err)
	var out []string
	for _, p := range parts {
		if p.To.Before(now) {
			out = append(out, strings.TrimPrefix(p.Table, "tasks."))
		}
	}
	require.NotEmpty(t, out, fmt.Sprint(parts))
	return out
}
