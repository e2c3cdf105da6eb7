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
	require.Len(t, claimAll(t, b, "third", 1), 1)
	_, err = b.pool.Exec(b.ctx, `VACUUM ANALYZE tasks.tasks`)
	require.NoError(t, err)

	o, err := b.store.ReadOverview(b.ctx, store.OverviewParams{Now: &now})
	require.NoError(t, err)
	require.Equal(t, now, o.Now)
	require.Equal(t, now, o.PendingAsOf, "no snapshot yet: the read takes one")
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

	plans := map[string]string{}
	for name := range store.OverviewSQL() {
		var err error
		_, plans[name], err = b.store.RunOverviewStatement(b.ctx, name, nil, now, true) // as ReadOverview runs them
		require.NoError(t, err)
		requireNoFinishedScan(t, b, plans[name], name)
		// No statement is JIT-compiled (the disable cost of a sequential
		// scan once made a 0.1 ms read take 300–600 ms of compiling).
		require.NotContains(t, plans[name], "JIT:", name)
	}
	// Partition indexes are named after the parent's columns: either
	// partial index on PENDING rows (the claim's or the fair claim's).
	require.Regexp(t, `Index Only Scan using \S+(priority_run_after|execution_mode_schema_name)\S* on `, plans["pending_refresh"])
	require.NotContains(t, plans["pending_refresh"], "Bitmap Heap Scan", "PENDING counts must not read the heap")
	// The overview reads the snapshot's one row, never a task.
	require.NotContains(t, plans["pending"], "tasks_")
	require.Contains(t, plans["pending"], "pending_snapshot")
	require.Contains(t, plans["throughput"], "status_finished_at")
	require.NotRegexp(t, `Index Cond: \(finished_at >=`, plans["throughput"],
		"the throughput must not scan a whole index for the finished_at range")
}

// TestPendingSnapshotFreshness: the overview's PENDING counts come from the
// snapshot, as of its time, until it is older than PendingMaxAge; then the
// read refreshes it. A refresh as of an earlier time than the snapshot's
// changes nothing.
func TestPendingSnapshotFreshness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := clock.Now().UTC().Truncate(time.Millisecond)
	enqueue := func(n int) {
		tasks := make([]store.NewTask, n)
		for i := range tasks {
			tasks[i] = newTask("noop")
		}
		_, err := b.store.InsertTasks(b.ctx, tasks)
		require.NoError(t, err)
	}
	pending := func(o store.Overview) int64 {
		var n int64
		for _, c := range o.Counts {
			if c.Status == wftype.StatusPending {
				n += c.Count
			}
		}
		return n
	}
	enqueue(2)
	taken, err := b.store.RefreshPendingSnapshot(b.ctx, &now)
	require.NoError(t, err)
	require.Equal(t, now, taken)
	enqueue(3)

	// Within the maximum age: the snapshot's counts, and its time.
	later := now.Add(10 * time.Second)
	o, err := b.store.ReadOverview(b.ctx, store.OverviewParams{Now: &later, PendingMaxAge: 15 * time.Second})
	require.NoError(t, err)
	require.Equal(t, int64(2), pending(o))
	require.Equal(t, now, o.PendingAsOf)

	// An older refresh (a slow statement overtaken) keeps the newer one.
	earlier := now.Add(-time.Minute)
	taken, err = b.store.RefreshPendingSnapshot(b.ctx, &earlier)
	require.NoError(t, err)
	require.Equal(t, now, taken)

	// Past the maximum age the read refreshes it.
	stale := now.Add(16 * time.Second)
	o, err = b.store.ReadOverview(b.ctx, store.OverviewParams{Now: &stale, PendingMaxAge: 15 * time.Second})
	require.NoError(t, err)
	require.Equal(t, int64(5), pending(o))
	require.Equal(t, stale, o.PendingAsOf)

	// With no PENDING task at all the snapshot still has a time.
	_, err = b.pool.Exec(b.ctx, `UPDATE tasks.tasks SET status = 'CANCELLED', finished_at = now()`)
	require.NoError(t, err)
	next := stale.Add(time.Second)
	_, err = b.store.RefreshPendingSnapshot(b.ctx, &next)
	require.NoError(t, err)
	o, err = b.store.ReadOverview(b.ctx, store.OverviewParams{Now: &next})
	require.NoError(t, err)
	require.Zero(t, pending(o))
	require.Equal(t, next, o.PendingAsOf)
}

// TestOverviewOutboxHeldEventsAreNotDue: an event no subscription matched
// is held (HoldEvents, as the consumer does for events.unmatched_grace):
// it counts as PENDING and as held, and not as the oldest due one, so a
// healthy outbox does not look stuck; a due event is the oldest due.
func TestOverviewOutboxHeldEventsAreNotDue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	emit := func(typ string) {
		t.Helper()
		_, err := b.store.InsertEvents(b.ctx, []store.NewEvent{{EventType: typ, Scope: "PLATFORM", SchemaName: wftype.SystemSchema, Payload: []byte(`{}`)}})
		require.NoError(t, err)
	}
	emit("nobody.listens")
	claimed, err := b.store.ClaimEvents(b.ctx, store.ClaimEventsParams{Owner: "c1", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	held, err := b.store.HoldEvents(b.ctx, "c1", []store.EventKey{{ID: claimed[0].ID, CreatedAt: claimed[0].CreatedAt}}, 15*time.Minute, nil)
	require.NoError(t, err)
	require.Len(t, held, 1)

	o, err := b.store.ReadOverview(b.ctx, store.OverviewParams{PendingMaxAge: time.Hour})
	require.NoError(t, err)
	require.Equal(t, int64(1), o.Outbox.Pending)
	require.Equal(t, int64(1), o.Outbox.Held)
	require.Nil(t, o.Outbox.OldestPending, "a held event is not due")

	emit("someone.listens")
	o, err = b.store.ReadOverview(b.ctx, store.OverviewParams{PendingMaxAge: time.Hour})
	require.NoError(t, err)
	require.Equal(t, int64(2), o.Outbox.Pending)
	require.Equal(t, int64(1), o.Outbox.Held)
	require.NotNil(t, o.Outbox.OldestPending)
	require.True(t, o.Outbox.OldestPending.After(claimed[0].CreatedAt), "the due one, not the held one")
}
