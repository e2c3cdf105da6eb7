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
	b := setupTenants(t, 20, 20, 1)
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
	b := setupTenants(t, 30, 30, 2)
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

// TestClaimRateLimitAfterTheIntervalLengthens: a deploy lengthens the
// type's rate_limit interval (100/minute -> 2/hour) in the middle of an
// hour. The row of tasks.rate_windows then holds a minute window that
// starts later than the new hour window; the claims under the new limit
// still start 2 in that hour, not 2 per claim. A later deploy that changes
// only the count keeps the hour's starts. The claims give their own time,
// so the windows are known whatever the date.
func TestClaimRateLimitAfterTheIntervalLengthens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "ta", "noop", 30, 0)
	hour := clock.Now().Truncate(time.Hour).Add(time.Hour) // after the tasks: they are due
	at := func(d time.Duration) *time.Time { t := hour.Add(d); return &t }

	got, _ := claimLimited(t, b, store.TypeLimits{RateStarts: 100, RateInterval: time.Minute}, nil, 1, at(37*time.Minute))
	require.Equal(t, map[string]int{"ta": 1}, got, "under the minute limit")

	perHour := func(n int) store.TypeLimits { return store.TypeLimits{RateStarts: n, RateInterval: time.Hour} }
	total := 0
	for i := range 4 {
		got, _ = claimLimited(t, b, perHour(2), nil, 3, at(38*time.Minute+time.Duration(i)*time.Minute))
		total += got["ta"]
	}
	require.Equal(t, 2, total, "2 starts per hour after the change, in all four claims of the hour")

	// Only the count changes: the hour's 2 starts still count.
	got, _ = claimLimited(t, b, perHour(3), nil, 3, at(50*time.Minute))
	require.Equal(t, map[string]int{"ta": 1}, got, "3 per hour, 2 started")
	got, _ = claimLimited(t, b, perHour(1), nil, 3, at(51*time.Minute))
	require.Empty(t, got, "1 per hour, 3 started")
	got, _ = claimLimited(t, b, perHour(1), nil, 3, at(time.Hour))
	require.Equal(t, map[string]int{"ta": 1}, got, "the next hour")
}

// TestClaimRateLimitAfterTheIntervalShortens: a deploy shortens the type's
// interval (2/hour -> 1 per 7 minutes) at the start of an hour whose start
// is not a multiple of 7 minutes: the new window began before the hour
// window the row holds, so it is older by start though it is the current
// one. Its claims still start 1 in it, and 1 in the next.
func TestClaimRateLimitAfterTheIntervalShortens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "tb", "noop", 30, 0)
	const short = 7 * time.Minute
	// An hour after the tasks (they are due) that a 7-minute window
	// straddles: windows are aligned to multiples of the interval since the
	// Unix epoch, and 6 hours in 7 have such a start.
	hour := clock.Now().Truncate(time.Hour).Add(time.Hour)
	for hour.Unix()%int64(short.Seconds()) == 0 {
		hour = hour.Add(time.Hour)
	}
	at := func(d time.Duration) *time.Time { t := hour.Add(d); return &t }

	got, _ := claimLimited(t, b, store.TypeLimits{RatePerTenant: 2, RateInterval: time.Hour}, nil, 3, at(0))
	require.Equal(t, map[string]int{"tb": 2}, got, "under the hourly limit")

	lim := store.TypeLimits{RatePerTenant: 1, RateInterval: short}
	secs := int64(short.Seconds())
	window := time.Unix(hour.Unix()/secs*secs, 0) // the 7 minutes that hold the hour's start
	require.True(t, window.Before(hour))
	total := 0
	for i := range 4 {
		got, _ = claimLimited(t, b, lim, nil, 3, at(time.Duration(i+1)*time.Second))
		total += got["tb"]
	}
	require.Equal(t, 1, total, "1 start in the 7 minutes from %s, in all four claims", window)
	got, _ = claimLimited(t, b, lim, nil, 3, at(window.Add(short).Sub(hour)))
	require.Equal(t, map[string]int{"tb": 1}, got, "the next 7 minutes")
}

// TestStartSyncAfterTheIntervalLengthens: SYNCHRONOUS runs count in the
// windows claims count in, and find them after an interval change as
// claims do. A claim under 100/minute records a minute window late in the
// hour; StartSync under 2/hour, in that hour, lets 2 runs start, not
// every one.
func TestStartSyncAfterTheIntervalLengthens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "ta", "noop", 5, 0)
	start := func(lim store.TypeLimits) string {
		t.Helper()
		var reason string
		require.NoError(t, b.store.InTx(b.ctx, func(tx *store.Store) error {
			v, err := tx.StartSync(b.ctx, store.SyncStart{TaskType: "noop", Tenant: "ta", Limits: lim})
			reason = v.Held
			return err
		}))
		return reason
	}
	// StartSync reads the database's clock: wait out an hour's last
	// minute (wall time, as the windows are), so that its runs fall in the
	// hour of the minute window the claim records.
	var now time.Time
	for {
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT statement_timestamp()`).Scan(&now))
		if left := now.Truncate(time.Hour).Add(time.Hour).Sub(now); left < time.Minute {
			time.Sleep(left + time.Second)
			continue
		}
		break
	}
	late := now.Truncate(time.Hour).Add(59 * time.Minute)
	got, _ := claimLimited(t, b, store.TypeLimits{RatePerTenant: 100, RateInterval: time.Minute}, nil, 1, &late)
	require.Equal(t, map[string]int{"ta": 1}, got)

	perHour := store.TypeLimits{RatePerTenant: 2, RateInterval: time.Hour}
	require.Empty(t, start(perHour))
	require.Empty(t, start(perHour))
	require.Equal(t, store.HeldRate, start(perHour), "2 runs started this hour")
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
	// pg_locks and pg_stat_activity are the cluster's: only this test's
	// database is looked at (other tests' claims wait on advisory locks too).
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, b.pool.QueryRow(b.ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			   AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting))
		return waiting
	}, time.Minute, time.Millisecond, "the claim waits for the lock")
	var began float64
	require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT extract(epoch FROM xact_start) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND datname = current_database()`).Scan(&began))
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
	var filled float64
	require.NoError(t, holder.QueryRow(b.ctx, `
INSERT INTO tasks.rate_windows (task_type, schema_name, window_start, starts)
VALUES ('noop', 'ta', to_timestamp(floor(extract(epoch FROM clock_timestamp()))), 5)
RETURNING extract(epoch FROM window_start)`).Scan(&filled))
	require.NoError(t, holder.Commit(b.ctx))

	select {
	case got := <-claimed:
		// tasks.rate_windows keeps one row per type and tenant, its newest
		// window: the holder's, or the claim's if it ran in a later one.
		// On a busy machine the holder's may be later than the second after
		// began: which window the claim ran in is read against the one the
		// holder filled, not guessed from began.
		var window float64
		require.NoError(t, b.pool.QueryRow(b.ctx,
			`SELECT extract(epoch FROM window_start) FROM tasks.rate_windows WHERE schema_name = 'ta'`).Scan(&window))
		require.Greater(t, int64(window), int64(began),
			"the claim counted its starts (%v) in the window its transaction began in, which was over", got)
		if int64(window) == int64(filled) {
			require.Empty(t, got, "the window the holder filled has no room left")
		} else {
			// The claim ran in a later window still (a very slow machine):
			// it had the whole room of that one.
			require.Greater(t, int64(window), int64(filled))
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
	// One time for the synchronous starts and the claims, in one hour's
	// window, whatever the clock says: the window is picked from it.
	now := clock.Now().Truncate(time.Hour).Add(90 * time.Minute)
	start := func(tenant string, lim store.TypeLimits) string {
		t.Helper()
		var reason string
		require.NoError(t, b.store.InTx(b.ctx, func(tx *store.Store) error {
			var err error
			v, err := tx.StartSync(b.ctx, store.SyncStart{TaskType: "noop", Tenant: tenant, Limits: lim, Now: &now})
			reason = v.Held
			return err
		}))
		return reason
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
