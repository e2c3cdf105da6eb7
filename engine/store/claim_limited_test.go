package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// claimLimited claims up to total tasks of noop under lim at now (nil: the
// database's clock) and returns them by tenant, and their ids.
func claimLimited(t *testing.T, b *bundle, lim store.TypeLimits, fair *store.Fairness, total int, now *time.Time) (map[string]int, []uuid.UUID) {
	t.Helper()
	c, err := b.store.Claim(b.ctx, store.ClaimParams{
		Owner: "w", Total: total, Fair: fair, Now: now,
		Limits: map[string]store.TypeLimits{"noop": lim},
		Slots:  []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: total, Lease: time.Minute}},
	})
	require.NoError(t, err)
	n := map[string]int{}
	var ids []uuid.UUID
	for _, tk := range c.Tasks {
		require.Equal(t, wftype.StatusActive, tk.Status)
		n[tk.SchemaName]++
		ids = append(ids, tk.ID)
	}
	return n, ids
}

// TestClaimPerTenantCap: no tenant gets more ACTIVE tasks than its cap, the
// others are not held up by it, and a run's end makes room again; with a
// global cap too, both hold.
func TestClaimPerTenantCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "ta", "noop", 20, 0)
	tenantTasks(t, b, "tb", "noop", 20, 0)
	tenantTasks(t, b, "tc", "noop", 1, 0)
	lim := store.TypeLimits{PerTenant: 3}
	got, ids := claimLimited(t, b, lim, &store.Fairness{}, 100, nil)
	require.Equal(t, map[string]int{"ta": 3, "tb": 3, "tc": 1}, got)
	got, _ = claimLimited(t, b, lim, nil, 100, nil)
	require.Empty(t, got, "every tenant is at its cap (fairness off too)")
	held, err := b.store.HeldTasks(b.ctx, map[string]store.TypeLimits{"noop": lim, "other": {}})
	require.NoError(t, err)
	require.ElementsMatch(t, []store.Held{
		{TaskType: "noop", SchemaName: "ta", Reason: store.HeldPerTenant, Count: 17},
		{TaskType: "noop", SchemaName: "tb", Reason: store.HeldPerTenant, Count: 17},
	}, held, "tc has nothing waiting")

	var ta []uuid.UUID
	for _, id := range ids {
		tk, err := b.store.GetTask(b.ctx, id)
		require.NoError(t, err)
		if tk.SchemaName == "ta" && len(ta) < 2 {
			ta = append(ta, id)
		}
	}
	_, err = b.store.ReleaseTasks(b.ctx, "w", ta)
	require.NoError(t, err)
	got, _ = claimLimited(t, b, lim, &store.Fairness{}, 100, nil)
	require.Equal(t, map[string]int{"ta": 2}, got, "the room the released runs left")

	// A global cap below the tenants' caps: 3 + 3 + 1 are ACTIVE, 8 in all.
	got, _ = claimLimited(t, b, store.TypeLimits{PerTenant: 5, Global: 8}, &store.Fairness{}, 100, nil)
	require.Equal(t, 1, got["ta"]+got["tb"], "%v", got)
}

// TestClaimRateLimit: at most RatePerTenant starts per tenant and RateStarts
// in all per window, counted across claims; the next window starts afresh.
// The claims give their own time, so the windows are known whatever the
// date.
func TestClaimRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "ta", "noop", 30, 0)
	tenantTasks(t, b, "tb", "noop", 30, 0)
	tenantTasks(t, b, "tc", "noop", 2, 0)
	lim := store.TypeLimits{RateStarts: 9, RatePerTenant: 4, RateInterval: time.Hour}
	// The start of the next hour: after the tasks were created, so they are due.
	window := clock.Now().Truncate(time.Hour).Add(time.Hour)
	at := func(d time.Duration) *time.Time { t := window.Add(d); return &t }

	got, _ := claimLimited(t, b, lim, &store.Fairness{}, 3, at(time.Second))
	require.Equal(t, 3, got["ta"]+got["tb"]+got["tc"])
	got2, _ := claimLimited(t, b, lim, &store.Fairness{}, 100, at(time.Minute))
	for tn, n := range got2 {
		got[tn] += n
	}
	require.Equal(t, 9, got["ta"]+got["tb"]+got["tc"], "the type's 9 starts per window: %v", got)
	require.LessOrEqual(t, got["ta"], 4)
	require.LessOrEqual(t, got["tb"], 4)
	got, _ = claimLimited(t, b, lim, &store.Fairness{}, 100, at(59*time.Minute))
	require.Empty(t, got, "the window is full")

	// A new window: tc's two tasks are gone, ta and tb start 4 each.
	got, _ = claimLimited(t, b, lim, &store.Fairness{}, 100, at(time.Hour))
	require.Equal(t, map[string]int{"ta": 4, "tb": 4}, got, "a new window")

	// Per tenant only: each tenant its 4, however many the others start.
	got, _ = claimLimited(t, b, store.TypeLimits{RatePerTenant: 4, RateInterval: time.Hour}, nil, 100, at(2*time.Hour))
	require.Equal(t, map[string]int{"ta": 4, "tb": 4}, got)
}

// TestClaimRateWindowAfterLockWait: a limited claim that waits for the
// type's lock while a new rate window opens counts its starts in the window
// it claims in, not the one its transaction began in. The claim's
// transaction begins (its lock statement) in one second-long window and
// waits; the holder of the lock records, in the next window, starts that
// fill that window's room, as a claim of another instance would; then it
// lets go. Counted in the window its transaction began in, the waiting claim
// would find none of those starts (the window it reads is over) and start a
// whole window's room on top of them.
func TestClaimRateWindowAfterLockWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "ta", "noop", 20, 0)
	lim := store.TypeLimits{RatePerTenant: 5, RateInterval: time.Second}

	holder, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(b.ctx) }()
	lock, _ := store.ClaimLimitedSQL()
	_, err = holder.Exec(b.ctx, lock, []string{"noop"})
	require.NoError(t, err)

	// Wall time: the windows are the database clock's whole seconds. Begin
	// the claim early in a second, so that it surely waits into the next.
	for time.Now().Nanosecond() > 300*int(time.Millisecond) {
		time.Sleep(10 * time.Millisecond)
	}
	claimed := make(chan map[string]int, 1)
	go func() {
		got, _ := claimLimited(t, b, lim, &store.Fairness{}, 100, nil)
		claimed <- got
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, b.pool.QueryRow(b.ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting))
		return waiting
	}, time.Minute, time.Millisecond, "the claim waits for the lock")
	var began float64
	require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT extract(epoch FROM xact_start) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&began))
	// Into the next window (on the database's clock), where the holder
	// records a full window of starts.
	for {
		var now float64
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT extract(epoch FROM clock_timestamp())`).Scan(&now))
		if int64(now) > int64(began) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err = holder.Exec(b.ctx, `
INSERT INTO tasks.rate_windows (task_type, schema_name, window_start, starts)
VALUES ('noop', 'ta', to_timestamp(floor(extract(epoch FROM clock_timestamp()))), 5)`)
	require.NoError(t, err)
	require.NoError(t, holder.Commit(b.ctx))

	select {
	case got := <-claimed:
		var window float64
		require.NoError(t, b.pool.QueryRow(b.ctx,
			`SELECT extract(epoch FROM window_start) FROM tasks.rate_windows WHERE schema_name = 'ta'`).Scan(&window))
		require.Greater(t, int64(window), int64(began),
			"the claim counted its starts (%v) in the window its transaction began in, which was over", got)
		if int64(window) == int64(began)+1 {
			require.Empty(t, got, "the window the holder filled has no room left")
		} else {
			// The claim ran in a later window still (a very slow machine):
			// it had the whole room of that one.
			require.Equal(t, map[string]int{"ta": 5}, got)
		}
	case <-time.After(time.Minute):
		t.Fatal("the claim did not return")
	}
}

// TestStartSyncSharesTheLimits: a SYNCHRONOUS run's start (StartSync)
// counts in its type's rate windows and is counted by claims, and claims'
// starts and ACTIVE tasks are counted by it.
func TestStartSyncSharesTheLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "ta", "noop", 10, 0)
	rate := store.TypeLimits{RatePerTenant: 3, RateInterval: time.Hour}
	start := func(tenant string, lim store.TypeLimits) string {
		t.Helper()
		var reason string
		require.NoError(t, b.store.InTx(b.ctx, func(tx *store.Store) error {
			var err error
			reason, err = tx.StartSync(b.ctx, "noop", tenant, lim)
			return err
		}))
		return reason
	}
	// StartSync reads the database's clock; the claims take their time from
	// it too, in the same hour's window: wait out an hour's last minute
	// (wall time, as the windows are).
	var now time.Time
	for {
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT statement_timestamp()`).Scan(&now))
		if left := now.Truncate(time.Hour).Add(time.Hour).Sub(now); left < time.Minute {
			time.Sleep(left + time.Second)
			continue
		}
		break
	}
	require.Empty(t, start("ta", rate))
	require.Empty(t, start("ta", rate))
	got, _ := claimLimited(t, b, rate, nil, 10, &now)
	require.Equal(t, map[string]int{"ta": 1}, got, "two of the tenant's three starts were synchronous runs")
	require.Equal(t, store.HeldRate, start("ta", rate))
	require.Empty(t, start("tb", rate), "another tenant's window")

	caps := store.TypeLimits{PerTenant: 1, Global: 2}
	require.Equal(t, store.HeldPerTenant, start("ta", caps), "ta has an ACTIVE task")
	require.Empty(t, start("tb", caps))
	got, _ = claimLimited(t, b, store.TypeLimits{Global: 2}, &store.Fairness{}, 10, nil)
	require.Equal(t, map[string]int{"ta": 1}, got)
	require.Equal(t, store.HeldGlobal, start("tb", caps), "two ACTIVE in all")
}
