package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestOverviewCountsAndPlans builds 100k finished tasks in older partitions
// and a few live ones in two tenants, checks what ReadOverview counts (also
// for one tenant), and checks the plans: the PENDING counts are an
// index-only scan of the claim index (its INCLUDE (schema_name)), the
// throughput's index conditions name the status (the plan that scanned a
// whole partition's index for the finished_at range had only finished_at),
// and no partition of finished rows is scanned sequentially.
func TestOverviewCountsAndPlans(t *testing.T) {
	b := setupFinished(t, 100000)
	now := clock.Now().UTC().Truncate(time.Millisecond)
	due, later := now.Add(-time.Hour), now.Add(time.Hour)
	task := func(typ, tenant string, runAfter time.Time) store.NewTask {
		nt := newTask(typ)
		nt.SchemaName, nt.Scope, nt.RunAfter = tenant, wftype.ScopeCatalog, &runAfter
		return nt
	}
	_, err := b.store.InsertTasks(b.ctx, []store.NewTask{
		task("noop", "s_a", due), task("noop", "s_a", due.Add(time.Minute)), task("noop", "s_a", later),
		task("noop", "s_b", due.Add(2*time.Minute)), task("other", "s_b", later), task("third", "s_b", due),
	})
	require.NoError(t, err)
	claimed, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w1", Total: 1,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "third", Max: 1, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	_, err = b.pool.Exec(b.ctx, `VACUUM ANALYZE tasks.tasks`)
	require.NoError(t, err)

	o, err := b.store.ReadOverview(b.ctx, store.OverviewParams{Now: &now})
	require.NoError(t, err)
	require.Equal(t, now, o.Now)
	require.ElementsMatch(t, []store.TaskCount{
		{Status: wftype.StatusPending, TaskType: "noop", SchemaName: "s_a", Count: 3},
		{Status: wftype.StatusPending, TaskType: "noop", SchemaName: "s_b", Count: 1},
		{Status: wftype.StatusPending, TaskType: "other", SchemaName: "s_b", Count: 1},
		{Status: wftype.StatusActive, TaskType: "third", SchemaName: "s_b", Count: 1},
	}, o.Counts)
	// "other" has nothing due: it has no oldest-due row.
	require.Equal(t, []store.PendingAge{
		{TaskType: "noop", SchemaName: "s_a", Due: 2, OldestDueAt: due},
		{TaskType: "noop", SchemaName: "s_b", Due: 1, OldestDueAt: due.Add(2 * time.Minute)},
	}, o.OldestPending)

	one, err := b.store.ReadOverview(b.ctx, store.OverviewParams{Now: &now, SchemaNames: []string{"s_b"}})
	require.NoError(t, err)
	require.ElementsMatch(t, []store.TaskCount{
		{Status: wftype.StatusPending, TaskType: "noop", SchemaName: "s_b", Count: 1},
		{Status: wftype.StatusPending, TaskType: "other", SchemaName: "s_b", Count: 1},
		{Status: wftype.StatusActive, TaskType: "third", SchemaName: "s_b", Count: 1},
	}, one.Counts)
	none, err := b.store.ReadOverview(b.ctx, store.OverviewParams{Now: &now, SchemaNames: []string{}})
	require.NoError(t, err)
	require.Empty(t, none.Counts)
	require.Empty(t, none.OldestPending)

	since := now.Add(-time.Hour)
	var all []string
	args := map[string][]any{"counts": {all, since}, "throughput": {all, since}, "pending": {all, now}}
	plans := map[string]string{}
	for name, q := range store.OverviewSQL() {
		tx, err := b.pool.Begin(b.ctx)
		require.NoError(t, err)
		_, err = tx.Exec(b.ctx, `SET LOCAL enable_seqscan = off`) // as ReadOverview runs them
		require.NoError(t, err)
		plans[name] = explainAnalyze(t, b, tx, q, args[name]...)
		require.NoError(t, tx.Rollback(b.ctx))
		for _, p := range partitionsBefore(t, b, now) {
			require.NotContains(t, plans[name], "Seq Scan on "+p+" ", "%s must not scan a partition of finished rows", name)
		}
	}
	// Partition indexes are named after the parent's columns: either
	// partial index on PENDING rows (the claim's or the fair claim's).
	require.Regexp(t, `Index Only Scan using \S+(priority_run_after|execution_mode_schema_name)\S* on `, plans["pending"])
	require.NotContains(t, plans["pending"], "Bitmap Heap Scan", "PENDING counts must not read the heap")
	require.Contains(t, plans["throughput"], "status_finished_at")
	require.NotRegexp(t, `Index Cond: \(finished_at >=`, plans["throughput"],
		"the throughput must not scan a whole index for the finished_at range")
}
