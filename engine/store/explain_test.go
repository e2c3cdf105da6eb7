package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestClaimUsesPartialIndex builds 1M finished tasks in older partitions and
// checks that the claim statement reads the partial index on PENDING rows and
// never scans a partition sequentially.
func TestClaimUsesPartialIndex(t *testing.T) {
	b := setupFinished(t, 1000000)
	_, err := b.pool.Exec(b.ctx, `ANALYZE tasks.tasks`)
	require.NoError(t, err)
	batch := make([]store.NewTask, 50)
	for i := range batch {
		batch[i] = newTask("noop")
	}
	_, err = b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	// Pauses (of a type and of a tenant these tasks are not) leave the plan
	// as it was: the claim reads tasks.pauses once and filters the scan.
	_, err = b.store.CreateCatalog(b.ctx, store.NewCatalog{ID: "paused", SchemaName: "s_paused"})
	require.NoError(t, err)
	for _, p := range []store.PauseParams{{Kind: store.PauseTaskType, Name: "other"}, {Kind: store.PauseTenant, Name: "s_paused"}} {
		_, _, err = b.store.PauseQueue(b.ctx, p)
		require.NoError(t, err)
	}

	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx) //nolint:errcheck
	plan := explainAnalyze(t, b, tx, store.ClaimSQL(),
		[]string{"ASYNCHRONOUS"}, []string{"noop"}, []int32{100}, []float64{60}, 100, nil, "w1")
	// Partition indexes are named after the parent's columns.
	require.Contains(t, plan, "priority_run_after")
	require.Contains(t, plan, "rows=50 ")
	requireNoFinishedScan(t, b, plan, "the claim")
}

// requireNoFinishedScan checks that plan, of the statement what, scans no
// partition of finished rows (those insertFinishedTasks filled)
// sequentially. The months are the fixture's, not those before the clock's
// month when the check runs: a test that starts on the last second of a
// month checks in the next, when the month it started in (empty) is before.
func requireNoFinishedScan(t *testing.T, b *bundle, plan, what string) {
	t.Helper()
	require.NotEmpty(t, b.finished, "no partitions of finished rows: setupFinished fills them")
	for _, p := range b.finished {
		require.NotContains(t, plan, "Seq Scan on "+p+" ", "%s must not scan a partition of finished rows", what)
	}
}

// setupFinished is setup for a parallel test of plans and counts over n
// finished tasks in older partitions (insertFinishedTasks); -short skips it.
func setupFinished(t *testing.T, n int) *bundle {
	t.Helper()
	if testing.Short() {
		t.Skipf("builds %d rows", n)
	}
	t.Parallel()
	b := setup(t)
	insertFinishedTasks(t, b, n)
	return b
}

// insertFinishedTasks creates the partitions of the three whole months
// before the current one and fills them with n COMPLETED tasks spread evenly
// across them, of types noop and other in turn, up to a day before the
// current month. The rows are placed by the partitions' bounds, not by a
// distance from now, so every partition before the current month holds rows
// whatever the date (on the first second of a month too), and they are
// history: none finished within the last day, whatever the date, so a
// window of recent outcomes (the overview's hour) never sees them.
func insertFinishedTasks(t *testing.T, b *bundle, n int) {
	t.Helper()
	now := clock.Now().UTC()
	thisMonth := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	first := thisMonth.AddDate(0, -3, 0)
	last := thisMonth.Add(-24 * time.Hour)
	_, err := b.store.EnsurePartitionsSpan(b.ctx, first, last)
	require.NoError(t, err)
	for m := first; m.Before(thisMonth); m = m.AddDate(0, 1, 0) {
		b.finished = append(b.finished, "tasks_p"+m.Format("2006_01"))
	}
	step := last.Sub(first) / time.Duration(n+1)
	_, err = b.pool.Exec(b.ctx, `
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, inputs, finished_at)
SELECT tasks.uuid_v7(ts), date_trunc('milliseconds', ts), 'system', 'SYSTEM', 'ASYNCHRONOUS',
       CASE WHEN g % 2 = 0 THEN 'noop' ELSE 'other' END, 'COMPLETED', '{}', ts
FROM generate_series(1, $2::int) g,
     LATERAL (SELECT $1::timestamptz + g * $3::interval AS ts) x`, first, n, step)
	require.NoError(t, err)
}

// explainAnalyze runs EXPLAIN (ANALYZE, COSTS OFF) of sql on q, logs the
// plan and returns it, a line a row.
func explainAnalyze(t *testing.T, b *bundle, q dbtest.Querier, sql string, args ...any) string {
	t.Helper()
	return dbtest.Explain(t, b.ctx, q, "ANALYZE, COSTS OFF", sql, args...)
}
