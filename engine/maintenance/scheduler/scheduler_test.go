package scheduler_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/maintenance/scheduler"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

const scheduleSpecs = `kind: TaskType
name: tick
handler: {builtin: noop}
---
kind: Schedule
name: every-minute
cron: "* * * * *"
task_type: tick
inputs: {}
---
kind: Schedule
name: hourly-latest
cron: "0 * * * *"
timezone: Asia/Kolkata
task_type: tick
missed: latest
---
kind: Schedule
name: every-70s
cron: "@every 70s"
task_type: tick
---
kind: Schedule
name: every-2m
cron: "@every 2m"
task_type: tick
---
kind: Schedule
name: every-2s
cron: "@every 2s"
task_type: tick
`

type bundle struct {
	ctx   context.Context
	store *store.Store
	set   *spec.Set
	clock *clock.Fake
	t0    time.Time
}

func setup(t *testing.T) *bundle {
	t.Helper()
	set, err := spec.Compile([]spec.Source{{Name: "s.yaml", Data: []byte(scheduleSpecs)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	// A whole minute, a few seconds into the current hour's second minute.
	t0 := clock.Now().UTC().Truncate(time.Hour).Add(time.Minute)
	return &bundle{ctx: context.Background(), store: dbtest.NewStore(t), set: set, clock: clock.NewFake(t0), t0: t0}
}

// leader is a scheduler of the named schedules that took the lead at now:
// its Resume passed.
func (b *bundle) leader(t *testing.T, now time.Time, names ...string) *scheduler.Scheduler {
	t.Helper()
	s := b.scheduler(t, names...)
	_, err := s.Resume(b.ctx, now)
	require.NoError(t, err)
	return s
}

// scheduler returns one instance's scheduler for the given schedules.
func (b *bundle) scheduler(t *testing.T, names ...string) *scheduler.Scheduler {
	t.Helper()
	var schedules []*spec.Schedule
	for _, s := range b.set.Schedules() {
		for _, n := range names {
			if s.Name() == n {
				schedules = append(schedules, s)
			}
		}
	}
	s, err := scheduler.New(scheduler.Config{
		Store: b.store, Client: client.New(b.store, b.set), Schedules: schedules, Clock: b.clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	return s
}

func (b *bundle) count(t *testing.T, q string) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.DB().QueryRow(b.ctx, q).Scan(&n))
	return n
}

// finishAll completes every task at once: their dedup keys are released, so
// only the recorded ticks stop a second firing.
func (b *bundle) finishAll(t *testing.T) {
	t.Helper()
	_, err := b.store.DB().Exec(b.ctx, `UPDATE tasks.tasks SET status = 'COMPLETED', finished_at = now() WHERE status = 'PENDING'`)
	require.NoError(t, err)
}

// TestTwoLeadersTenTicks: two instances both believe they lead (the worst
// case of a handover) and run a pass at each of 10 ticks, concurrently, with
// every task finishing at once: 10 tasks, not 20 (the resume at t0, the
// schedule's first sighting, fires nothing: its history starts there).
func TestTwoLeadersTenTicks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, c := b.scheduler(t, "every-minute"), b.scheduler(t, "every-minute")
	resumed := 0
	for _, s := range []*scheduler.Scheduler{a, c} {
		r, err := s.Resume(b.ctx, b.t0)
		require.NoError(t, err)
		resumed += r.Fired
	}
	require.Zero(t, resumed)
	b.finishAll(t)
	fired := 0
	for i := 1; i <= 10; i++ {
		now := b.t0.Add(time.Duration(i)*time.Minute + 3*time.Second)
		b.clock.Set(now)
		var wg sync.WaitGroup
		results := make([]scheduler.Result, 2)
		for j, s := range []*scheduler.Scheduler{a, c} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.RunAt(b.ctx, now)
				require.NoError(t, err)
				results[j] = r
			}()
		}
		wg.Wait()
		require.Equal(t, 1, results[0].Fired+results[1].Fired, "tick %d", i)
		require.Equal(t, 1, results[0].AlreadyFired+results[1].AlreadyFired, "tick %d", i)
		fired += results[0].Fired + results[1].Fired
		b.finishAll(t)
	}
	require.Equal(t, 10, fired)
	require.Equal(t, 10, b.count(t, `SELECT count(*) FROM tasks.tasks`))
	require.Equal(t, 10, b.count(t, `SELECT count(DISTINCT dedup_key) FROM tasks.tasks`))
	require.Equal(t, 10, b.count(t, `SELECT count(*) FROM tasks.schedule_ticks WHERE task_id IS NOT NULL`))
}

// TestLeaderChangeLosesAndDoublesNone: instance A fires ticks 1–4 and dies
// just before tick 5; B takes over 20 seconds later and fires 5–10 (5 as a
// catch-up); A comes back as leader after tick 10 and fires nothing twice.
func TestLeaderChangeLosesAndDoublesNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, c := b.scheduler(t, "every-minute"), b.scheduler(t, "every-minute")
	tick := func(i int) time.Time { return b.t0.Add(time.Duration(i) * time.Minute) }

	_, err := a.Resume(b.ctx, b.t0)
	require.NoError(t, err)
	for i := 1; i <= 4; i++ {
		r, err := a.RunAt(b.ctx, tick(i).Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, r.Fired)
		b.finishAll(t)
	}
	// A dies; tick 5 passes with no leader; B leads 20s later.
	r, err := c.Resume(b.ctx, tick(5).Add(20*time.Second))
	require.NoError(t, err)
	require.Equal(t, scheduler.Result{Fired: 1}, r, "the handover tick fires")
	require.Equal(t, tick(6), c.NextTick())
	for i := 6; i <= 10; i++ {
		r, err := c.RunAt(b.ctx, tick(i).Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, r.Fired)
		b.finishAll(t)
	}
	// A leads again: it resumes from the last recorded tick, not its own.
	r, err = a.Resume(b.ctx, tick(10).Add(30*time.Second))
	require.NoError(t, err)
	require.Equal(t, scheduler.Result{}, r)

	require.Equal(t, 10, b.count(t, `SELECT count(*) FROM tasks.tasks`))
	rows, err := b.store.DB().Query(b.ctx, `SELECT tick FROM tasks.schedule_ticks ORDER BY tick`)
	require.NoError(t, err)
	defer rows.Close()
	i := 1
	for rows.Next() {
		var at time.Time
		require.NoError(t, rows.Scan(&at))
		require.True(t, tick(i).Equal(at), "tick %d is %s", i, at)
		i++
	}
	require.Equal(t, 11, i)
}

// TestMissedPolicies: after an outage of three hours, "skip" fires nothing
// for the gap (only the catch-up window; the first "outage" is the hour
// between the schedules' first sighting and the next pass) and "latest" fires once, for the
// latest missed tick (an hourly schedule read in Asia/Kolkata, UTC+5:30).
func TestMissedPolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.leader(t, b.t0, "every-minute", "hourly-latest")
	// A first leader fires one tick of each, at t0+1h.
	later := b.t0.Add(time.Hour)
	r, err := s.RunAt(b.ctx, later)
	require.NoError(t, err)
	// every-minute: the hour passed without a pass; the last two minutes are
	// a catch-up, the rest is skipped. hourly-latest: its latest tick fires.
	require.Equal(t, scheduler.Result{Fired: 3, Skipped: 1}, r)

	// Three hours without a leader, then a new one.
	back := later.Add(3*time.Hour + 10*time.Minute)
	fresh := b.scheduler(t, "every-minute", "hourly-latest")
	r, err = fresh.Resume(b.ctx, back)
	require.NoError(t, err)
	require.Equal(t, scheduler.Result{Fired: 3, Skipped: 1}, r)
	var latest time.Time
	require.NoError(t, b.store.DB().QueryRow(b.ctx, `SELECT max(tick) FROM tasks.schedule_ticks WHERE schedule_name = 'hourly-latest'`).Scan(&latest))
	// Kolkata hours start at :30 UTC.
	require.Equal(t, 30, latest.UTC().Minute())
	require.True(t, latest.Before(back.Add(-2*time.Minute)) && latest.After(back.Add(-time.Hour-2*time.Minute)), "latest tick %s", latest)
}

// runEvery runs the leader service (Run) with one schedule firing every
// interval, on c, until the test ends; fired counts the ticks it fired.
func runEvery(t *testing.T, every string, c clock.Clock) (fired func() int) {
	t.Helper()
	set, err := spec.Compile([]spec.Source{{Name: "s.yaml", Data: []byte(`kind: TaskType
name: tick
handler: {builtin: noop}
---
kind: Schedule
name: every
cron: "@every ` + every + `"
task_type: tick
`)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	st := dbtest.NewStore(t)
	s, err := scheduler.New(scheduler.Config{Store: st, Client: client.New(st, set), Schedules: set.Schedules(), Clock: c,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return func() int {
		var n int
		require.NoError(t, st.DB().QueryRow(context.Background(), `SELECT count(*) FROM tasks.schedule_ticks WHERE task_id IS NOT NULL`).Scan(&n))
		return n
	}
}

// TestRunFiresOnTheRealClock runs the leader service itself on the wall
// clock with a one-second schedule until its first tick fires.
func TestRunFiresOnTheRealClock(t *testing.T) {
	t.Parallel()
	fired := runEvery(t, "1s", clock.Real{})
	require.Eventually(t, func() bool { return fired() >= 1 }, 10*time.Second, 20*time.Millisecond)
}

// TestRunWaitsOnItsClock runs the leader service on a test's clock with an
// hourly schedule: it waits on that clock, so the test moves it an hour
// ahead and the tick fires, with no hour waited.
func TestRunWaitsOnItsClock(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(clock.Now().UTC().Truncate(time.Second))
	fired := runEvery(t, "1h", fake)
	wait, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	// The first pass has run (it records the schedule's first sighting)
	// when the service waits on the clock for the next tick.
	require.NoError(t, fake.AwaitWaiters(wait, 1))
	before := fired()
	fake.Advance(time.Hour)
	require.Eventually(t, func() bool { return fired() > before }, 30*time.Second, 10*time.Millisecond)
}
