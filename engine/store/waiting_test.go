package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestWaitingReasons: one statement says why each PENDING task of a list
// waits: not due, paused (type or tenant), a type's global cap, a tenant's
// cap, a rate window used up; nothing for a task that only waits its turn,
// nor for one that is not PENDING.
func TestWaitingReasons(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.serve(t, "w", "capped", "tenanted", "rated", "paused_type", "free") // a live instance serves them
	// A window far longer than any test run: no boundary is crossed.
	const window = 100 * 365 * 24 * time.Hour
	limits := map[string]store.TypeLimits{
		"capped":   {Global: 1},
		"tenanted": {PerTenant: 1},
		"rated":    {RateStarts: 2, RateInterval: window},
		"free":     {},
	}
	task := func(taskType, schema string, runAfter *time.Time) store.NewTask {
		nt := newTask(taskType)
		if schema != wftype.SystemSchema {
			nt.SchemaName, nt.Scope = schema, wftype.ScopeCatalog
		}
		nt.RunAfter = runAfter
		return nt
	}
	later := clock.Now().Add(time.Hour)
	// One of each capped type runs, so the next waits.
	running, err := b.store.InsertTasks(b.ctx, []store.NewTask{task("capped", "system", nil), task("tenanted", "s_a", nil)})
	require.NoError(t, err)
	require.Len(t, claimAll(t, b, "capped", 1), 1)
	require.Len(t, claimAll(t, b, "tenanted", 1), 1)
	_, err = b.pool.Exec(b.ctx, `INSERT INTO tasks.rate_windows (task_type, schema_name, window_start, starts)
VALUES ('rated', '', to_timestamp(floor(extract(epoch FROM now()) / $1) * $1), 2)`, window.Seconds())
	require.NoError(t, err)
	_, _, err = b.store.PauseQueue(b.ctx, store.PauseParams{Kind: store.PauseTaskType, Name: "paused_type"})
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `INSERT INTO catalog.catalogs (catalog_id, schema_name) VALUES ('paused', 's_paused')`)
	require.NoError(t, err)
	_, _, err = b.store.PauseQueue(b.ctx, store.PauseParams{Kind: store.PauseTenant, Name: "s_paused"})
	require.NoError(t, err)

	res, err := b.store.InsertTasks(b.ctx, []store.NewTask{
		task("capped", "system", nil),      // 0: concurrency_global
		task("tenanted", "s_a", nil),       // 1: concurrency_per_tenant
		task("tenanted", "s_b", nil),       // 2: another tenant has room
		task("rated", "system", nil),       // 3: rate_limit
		task("paused_type", "system", nil), // 4: paused
		task("free", "s_paused", nil),      // 5: paused (its tenant)
		task("capped", "system", &later),   // 6: not due comes first
		task("free", "system", nil),        // 7: only its turn
	})
	require.NoError(t, err)
	var tasks []wftype.Task
	for _, r := range res {
		tasks = append(tasks, r.Task)
	}
	active, err := b.store.GetTask(b.ctx, running[0].Task.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusActive, active.Status)
	tasks = append(tasks, active) // 8: not PENDING

	got, err := b.store.WaitingReasons(b.ctx, tasks, limits, nil)
	require.NoError(t, err)
	want := map[int]string{0: store.HeldGlobal, 1: store.HeldPerTenant, 3: store.HeldRate, 4: store.WaitingPaused,
		5: store.WaitingPaused, 6: store.WaitingNotDue}
	for i, tk := range tasks {
		require.Equal(t, want[i], got[tk.ID], "task %d (%s, %s)", i, tk.TaskType, tk.SchemaName)
	}
	require.Len(t, got, len(want))

	// No PENDING task: no statement, no reason.
	none, err := b.store.WaitingReasons(b.ctx, []wftype.Task{active}, limits, nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

// TestWaitingReasonsOnTheCallersClock: whether a task is due is decided on
// the caller's clock, the one its claims read (ClaimParams.Now), not on
// the database's: with an engine clock a day ahead of the database, a task
// due an hour ago by that clock is not "not_due" (and a claim on that clock
// takes it); with one a day behind, a task due an hour ago by the
// database's clock is "not_due" (and a claim on that clock leaves it).
func TestWaitingReasonsOnTheCallersClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.serve(t, "w", "clocked_ahead", "clocked_behind")
	var dbNow time.Time
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT now()`).Scan(&dbNow))
	for _, tc := range []struct {
		name    string
		clk     *clock.Fake
		due     bool
		taskDue time.Time
	}{
		{"ahead", clock.NewFake(dbNow.Add(24 * time.Hour)), true, dbNow.Add(23 * time.Hour)},
		{"behind", clock.NewFake(dbNow.Add(-24 * time.Hour)), false, dbNow.Add(-time.Hour)},
	} {
		nt := newTask("clocked_" + tc.name)
		nt.RunAfter = &tc.taskDue
		res, err := b.store.InsertTasks(b.ctx, []store.NewTask{nt})
		require.NoError(t, err)
		got, err := b.store.WaitingReasons(b.ctx, []wftype.Task{res[0].Task}, nil, tc.clk.DBNow())
		require.NoError(t, err)
		claimed, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{
			Owner: "w1", Total: 1, Now: tc.clk.DBNow(),
			Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: nt.TaskType, Max: 1, Lease: time.Minute}},
		})
		require.NoError(t, err)
		if tc.due {
			require.Empty(t, got, tc.name)
			require.Len(t, claimed, 1, tc.name)
		} else {
			require.Equal(t, store.WaitingNotDue, got[res[0].Task.ID], tc.name)
			require.Empty(t, claimed, tc.name)
		}
	}
}
