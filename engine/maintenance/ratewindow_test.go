package maintenance_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// The tests of rate windows run the supervisor on a fake clock, which the
// prune reads (Clock.DBNow), and give the claims their own times on it, in
// windows after the next whole hour: the tasks, created now, are due then,
// and the windows are known whatever the date.

// nextHour is the start of the hour after the real clock's, in UTC as the
// rows read back.
func nextHour() time.Time { return clock.Now().UTC().Truncate(time.Hour).Add(time.Hour) }

// tenantTasks creates the catalog tenant (schema of the same name) when it
// is missing and n PENDING noop tasks of it.
func (b *bundle) tenantTasks(t *testing.T, tenant string, n int) {
	t.Helper()
	if _, err := b.store.GetCatalog(b.ctx, tenant); err != nil {
		_, err := b.store.CreateCatalog(b.ctx, store.NewCatalog{ID: tenant, SchemaName: tenant})
		require.NoError(t, err)
	}
	batch := make([]store.NewTask, n)
	for i := range batch {
		batch[i] = store.NewTask{
			SchemaName: tenant, Scope: wftype.ScopeCatalog, ExecutionMode: wftype.ModeAsync,
			TaskType: "noop", Inputs: json.RawMessage(`{}`), MaxRetries: 3,
		}
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
}

// claim claims up to 100 noop tasks under lim at time at, fairly, and
// counts them by tenant.
func (b *bundle) claim(t *testing.T, lim store.TypeLimits, at time.Time) map[string]int {
	t.Helper()
	c, err := b.store.Claim(b.ctx, store.ClaimParams{
		Owner: "w", Total: 100, Now: &at, Fair: &store.Fairness{},
		Limits: map[string]store.TypeLimits{"noop": lim},
		Slots:  []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 100, Lease: time.Minute}},
	})
	require.NoError(t, err)
	n := map[string]int{}
	for _, tk := range c.Tasks {
		n[tk.SchemaName]++
	}
	return n
}

// rateWindow is a row of tasks.rate_windows.
type rateWindow struct {
	TaskType, Tenant string
	Start            time.Time
	Seconds          *float64 // NULL: written before migration 029
	Starts           int
}

func (b *bundle) rateWindows(t *testing.T) []rateWindow {
	t.Helper()
	rows, err := b.store.DB().Query(b.ctx, `
SELECT task_type, schema_name, window_start, window_seconds, starts
FROM tasks.rate_windows ORDER BY task_type, schema_name`)
	require.NoError(t, err)
	defer rows.Close()
	var out []rateWindow
	for rows.Next() {
		var w rateWindow
		require.NoError(t, rows.Scan(&w.TaskType, &w.Tenant, &w.Start, &w.Seconds, &w.Starts))
		w.Start = w.Start.UTC()
		out = append(out, w)
	}
	require.NoError(t, rows.Err())
	return out
}

// keys names rows as type/tenant.
func keys(ws []rateWindow) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.TaskType + "/" + w.Tenant
	}
	return out
}

// addRateWindow writes a row as a claim of another type (or an older wf)
// left it; seconds 0 is NULL.
func (b *bundle) addRateWindow(t *testing.T, taskType string, start time.Time, seconds float64) {
	t.Helper()
	b.exec(t, `
INSERT INTO tasks.rate_windows (task_type, schema_name, window_start, window_seconds, starts)
VALUES ($1, '', $2, nullif($3::float8, 0), 1)`, taskType, start, seconds)
}

// rateSupervisor is a supervisor on a fake clock at now.
func (b *bundle) rateSupervisor(t *testing.T, now time.Time, batch int) (*maintenance.Supervisor, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(now)
	return b.supervisor(t, func(c *maintenance.Config) { c.Clock, c.BatchSize = fake, batch }), fake
}

// TestMaintenancePrunesRateWindowsThatAreOver: a pass deletes, in batches,
// the rows of tasks.rate_windows whose window ended more than the grace
// ago; a row of no recorded length (before migration 029) counts as a
// window of the longest length a spec may give (a day). Rows of windows
// still open, or over for less than the grace, stay; a second pass
// deletes nothing.
func TestMaintenancePrunesRateWindowsThatAreOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := nextHour()
	b.tenantTasks(t, "ta", 5)
	b.tenantTasks(t, "tb", 5)
	lim := store.TypeLimits{RateStarts: 100, RatePerTenant: 2, RateInterval: time.Minute}
	require.Equal(t, map[string]int{"ta": 2, "tb": 2}, b.claim(t, lim, w.Add(time.Second)))
	b.addRateWindow(t, "legacy_old", w.Add(-23*time.Hour), 0) // over by w+1h at the latest
	b.addRateWindow(t, "legacy_new", w.Add(-22*time.Hour), 0) // may be open until w+2h
	b.addRateWindow(t, "daily", w, (24 * time.Hour).Seconds())
	b.addRateWindow(t, "recent", w.Add(time.Hour), time.Hour.Seconds()) // over at w+2h, within the grace
	require.Len(t, b.rateWindows(t), 7)

	// The grace ends at w+1h30m: noop's minute windows and legacy_old go.
	now := w.Add(2*time.Hour + 30*time.Minute)
	require.Equal(t, time.Hour, store.RateWindowGrace, "the times above assume it")
	sup, _ := b.rateSupervisor(t, now, 2)
	res, err := sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.Equal(t, []string{"daily/", "legacy_new/", "recent/"}, keys(b.rateWindows(t)))
	require.EqualValues(t, 4, res.RateWindowsDeleted)

	res, err = sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.Zero(t, res.RateWindowsDeleted)
	require.Len(t, b.rateWindows(t), 3)
}

// TestMaintenanceKeepsTheCurrentRateWindow: a pass in the middle of a
// window deletes a tenant's row of an ended window but keeps the current
// window's rows, and their counts still hold: a claim after the pass, in
// the same window, starts nothing.
func TestMaintenanceKeepsTheCurrentRateWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := nextHour()
	lim := store.TypeLimits{RateStarts: 3, RatePerTenant: 2, RateInterval: time.Hour}
	b.tenantTasks(t, "tc", 1)
	require.Equal(t, map[string]int{"tc": 1}, b.claim(t, lim, w.Add(time.Second)))
	b.tenantTasks(t, "ta", 5)
	b.tenantTasks(t, "td", 5)
	current := w.Add(3 * time.Hour)
	got := b.claim(t, lim, current.Add(time.Second))
	require.Equal(t, 3, got["ta"]+got["td"], "the type's 3 starts of the window: %v", got)

	now := current.Add(30 * time.Minute)
	sup, _ := b.rateSupervisor(t, now, 100)
	res, err := sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	rows := b.rateWindows(t)
	require.Equal(t, []string{"noop/", "noop/ta", "noop/td"}, keys(rows), "tc's window ended at w+1h")
	require.EqualValues(t, 1, res.RateWindowsDeleted)
	starts := 0
	for _, r := range rows {
		require.Equal(t, current, r.Start, r)
		if r.Tenant != "" {
			starts += r.Starts
		}
	}
	require.Equal(t, 3, rows[0].Starts, "the type's starts")
	require.Equal(t, 3, starts, "the tenants' starts")

	require.Empty(t, b.claim(t, lim, now.Add(time.Minute)), "the window's starts still count")
}

// TestMaintenancePrunesADroppedCatalogsRateWindow: the row of a tenant
// whose catalog was deleted goes once its window is over (the rate windows
// live in the queue's database, which may hold no catalogs: the window's
// end is all the prune reads); another tenant's current window stays.
func TestMaintenancePrunesADroppedCatalogsRateWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := nextHour()
	lim := store.TypeLimits{RatePerTenant: 2, RateInterval: time.Minute}
	b.tenantTasks(t, "gone", 2)
	require.Equal(t, map[string]int{"gone": 2}, b.claim(t, lim, w.Add(time.Second)))
	_, _, err := b.store.DeleteCatalog(b.ctx, "gone")
	require.NoError(t, err)
	b.tenantTasks(t, "kept", 3)
	later := w.Add(2 * time.Hour)
	require.Equal(t, map[string]int{"kept": 2}, b.claim(t, lim, later.Add(time.Second)))
	require.Equal(t, []string{"noop/gone", "noop/kept"}, keys(b.rateWindows(t)))

	now := later.Add(30 * time.Second)
	sup, _ := b.rateSupervisor(t, now, 100)
	_, err = sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	rows := b.rateWindows(t)
	require.Equal(t, []string{"noop/kept"}, keys(rows))
	require.Equal(t, later, rows[0].Start)
}

// TestRateWindowPruneSkipsATypeBeingClaimed: while a transaction holds a
// limited type's lock (a synchronous start, as a claim does, rewriting an
// ended row of its tenant to the current window), a pass neither waits for
// it nor deletes the type's rows; it deletes another type's. Once the start
// commits, its count holds, and the next pass deletes the type's other
// ended row.
func TestRateWindowPruneSkipsATypeBeingClaimed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := nextHour()
	lim := store.TypeLimits{RatePerTenant: 1, RateInterval: time.Hour}
	b.tenantTasks(t, "ta", 3)
	b.tenantTasks(t, "tb", 3)
	require.Equal(t, map[string]int{"ta": 1, "tb": 1}, b.claim(t, lim, w.Add(time.Second)))
	b.addRateWindow(t, "other", w, time.Hour.Seconds())

	current := w.Add(3 * time.Hour)
	now := current.Add(time.Minute)
	sup, fake := b.rateSupervisor(t, w, 100)
	// A first pass, before any window is over, creates the partitions ahead
	// and drops what it may: those need locks of tasks.tasks that the
	// transaction below holds (it reads the table).
	_, err := sup.RunOnce(b.ctx, w)
	require.NoError(t, err)
	require.Len(t, b.rateWindows(t), 3)
	fake.Set(now)
	require.NoError(t, b.store.InTx(b.ctx, func(tx *store.Store) error {
		v, err := tx.StartSync(b.ctx, store.SyncStart{TaskType: "noop", Tenant: "ta", Limits: lim, Now: &current})
		require.NoError(t, err)
		require.Empty(t, v.Held, "a new window")
		type result struct {
			res maintenance.Result
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := sup.RunOnce(b.ctx, now)
			done <- result{res, err}
		}()
		select {
		case r := <-done:
			require.NoError(t, r.err)
			require.EqualValues(t, 1, r.res.RateWindowsDeleted)
		case <-time.After(time.Minute):
			t.Fatal("the pass waited for the transaction that holds the type's lock")
		}
		require.Equal(t, []string{"noop/ta", "noop/tb"}, keys(b.rateWindows(t)), "other's row went, noop's stay")
		return nil
	}))

	rows := b.rateWindows(t)
	require.Equal(t, current, rows[0].Start, "ta's start is counted in the current window")
	res, err := sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.RateWindowsDeleted)
	rows = b.rateWindows(t)
	require.Equal(t, []string{"noop/ta"}, keys(rows), "tb's window ended at w+1h")
	require.Equal(t, 1, rows[0].Starts)
	require.Equal(t, map[string]int{"tb": 1}, b.claim(t, lim, now.Add(time.Minute)), "ta's start still counts")
}

// TestRateWindowPruneGoesOnPastAHeldType: a pass goes on until a batch is
// short, and the rows of a type a claim holds are passed over when the
// rows are picked, so they do not cut a batch short: the ended rows of the
// other types go in the same pass. Picked first and then skipped, a busy
// type's ended rows at the front of the table stopped every pass there.
func TestRateWindowPruneGoesOnPastAHeldType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := nextHour()
	const busy, quiet = "busy", "quiet"
	// Ended windows (over at w+1h), the busy type's first in the heap.
	for _, tt := range []string{busy, quiet} {
		for _, tenant := range []string{"t1", "t2", "t3"} {
			b.exec(t, `
INSERT INTO tasks.rate_windows (task_type, schema_name, window_start, window_seconds, starts)
VALUES ($1, $2, $3, 3600, 1)`, tt, tenant, w)
		}
	}
	now := w.Add(3 * time.Hour)
	sup, _ := b.rateSupervisor(t, now, 3)
	require.NoError(t, b.store.InTx(b.ctx, func(tx *store.Store) error {
		// What a claim of the busy type holds while it counts (globalLockSQL).
		_, err := tx.DB().Exec(b.ctx, `SELECT pg_advisory_xact_lock(hashtextextended('wf:global:' || $1::text, 0))`, busy)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := sup.RunOnce(b.ctx, now)
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("the pass waited for the transaction that holds the busy type's lock")
		}
		return nil
	}))
	var left []string
	for _, r := range b.rateWindows(t) {
		if r.TaskType == quiet {
			left = append(left, r.Tenant)
		}
	}
	require.Empty(t, left, "the quiet type's ended windows, which no one holds, should be deleted by the pass")
}
