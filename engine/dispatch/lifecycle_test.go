package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// TestReclaimWhileOldRunStillRuns: a run lost its lease (the janitor
// requeued it while the heartbeat could not reach the database) but its
// handler has not returned yet, and the same instance claims the task again.
// The old run must be cancelled as soon as the task is claimed anew (its
// lease is gone, though the owner on the row is this instance again, so no
// heartbeat will tell), and both runs keep their slots until they return.
func TestReclaimWhileOldRunStillRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	type attempt struct {
		ctx     context.Context
		release chan struct{}
	}
	attempts := make(chan attempt, 2)
	unblock := make(chan struct{}) // lets every handler return when the test ends
	r := funcRunner{types: map[string]bool{"slow": true}, fn: func(ctx context.Context, _ *wftype.Task) (json.RawMessage, error) {
		a := attempt{ctx: ctx, release: make(chan struct{})}
		attempts <- a
		select { // ignores ctx, as a handler stuck in a blocking call does
		case <-a.release:
		case <-unblock:
		}
		return json.RawMessage(`{"ok":true}`), nil
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) { c.HeartbeatInterval = time.Hour })
	stop := runFor(d)
	defer stop()
	defer close(unblock)
	ids := enqueue(t, b, "slow", 1, 3)
	first := <-attempts

	// What the janitor does to an expired lease, due at once.
	_, err := b.store.DB().Exec(b.ctx, `UPDATE tasks.tasks SET status = 'PENDING', owner_id = NULL, locked_until = NULL,
		retry_count = retry_count + 1, run_after = now() WHERE task_id = $1`, ids[0])
	require.NoError(t, err)
	b.bus.Publish(signalbus.TaskQueued, "slow")
	var second attempt
	select {
	case second = <-attempts:
	case <-time.After(10 * time.Second):
		t.Fatal("task not claimed again")
	}
	select {
	case <-first.ctx.Done():
		require.ErrorContains(t, context.Cause(first.ctx), "lease lost")
	case <-time.After(5 * time.Second):
		t.Fatal("the old run was not cancelled when its task was claimed again")
	}
	require.Equal(t, 2, d.Running())

	// The old run returns: its result is dropped, the new run keeps its
	// slot and its lease.
	close(first.release)
	require.Eventually(t, func() bool { return d.Running() == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, d.Beat(b.ctx))
	require.NoError(t, second.ctx.Err())
	tk, err := b.store.GetTask(b.ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, wftype.StatusActive, tk.Status)

	close(second.release)
	require.Eventually(t, func() bool {
		tk, _ := b.store.GetTask(b.ctx, ids[0])
		return tk.Status == wftype.StatusCompleted
	}, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return d.Running() == 0 }, 5*time.Second, 5*time.Millisecond)
}

// TestShutdownEndsWithHandlerIgnoringContext: a handler that never returns
// must not keep the instance from stopping: after the grace period its task
// is handed back and Run returns.
func TestShutdownEndsWithHandlerIgnoringContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	r := funcRunner{types: map[string]bool{"stuck": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-release
		return nil, nil
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) { c.Grace = 50 * time.Millisecond })
	stop := runFor(d)
	ids := enqueue(t, b, "stuck", 1, 3)
	<-started
	stopped := make(chan struct{})
	go func() { defer close(stopped); stop() }()
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return: a handler that ignores its context blocks shutdown")
	}
	tk, err := b.store.GetTask(b.ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, wftype.StatusPending, tk.Status)
}

// TestRetryDelayUsesDatabaseClock: with the host clock an hour ahead of the
// database's, a failed run is retried after its backoff by the database's
// clock, which every instance claims by, not an hour later.
func TestRetryDelayUsesDatabaseClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var runs atomic.Int32
	r := funcRunner{types: map[string]bool{"flaky": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		runs.Add(1)
		return nil, errors.New("upstream down")
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Clock = clock.Skewed{Offset: time.Hour}
		c.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: "flaky"}] = execution.Rule{
			Backoff: func(int) time.Duration { return 10 * time.Second },
		}
	})
	stop := runFor(d)
	defer stop()
	ids := enqueue(t, b, "flaky", 1, 3)
	require.Eventually(t, func() bool {
		tk, _ := b.store.GetTask(b.ctx, ids[0])
		return tk.Status == wftype.StatusPending && tk.RetryCount == 1
	}, 10*time.Second, 5*time.Millisecond)
	var wait float64
	require.NoError(t, b.store.DB().QueryRow(b.ctx,
		`SELECT extract(epoch FROM run_after - now()) FROM tasks.tasks WHERE task_id = $1`, ids[0]).Scan(&wait))
	require.InDelta(t, 10, wait, 3, "retry due in %.0fs by the database's clock", wait)
}

// TestSnoozeKeepsRetries: a handler that snoozes puts its task off by the
// delay it asked for, on the database's clock, without counting a retry;
// past max_snoozes a snooze is a failed attempt, which counts one.
func TestSnoozeKeepsRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := clock.NewFake(clock.Now().UTC().Add(time.Minute))
	var runs atomic.Int32
	r := funcRunner{types: map[string]bool{"later": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		if runs.Add(1) <= 3 {
			return nil, wftype.Snooze(30*time.Second, "not yet")
		}
		return nil, errors.New("down")
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Clock = fake
		c.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: "later"}] = execution.Rule{
			MaxSnoozes: 2, Backoff: func(int) time.Duration { return time.Hour },
		}
	})
	stop := runFor(d)
	defer stop()
	ids := enqueue(t, b, "later", 1, 5)

	waitRuns := func(n int32) wftype.Task {
		var tk wftype.Task
		require.Eventually(t, func() bool {
			// The count first: a run counts itself before its outcome is
			// written, so a task read after it is that run's outcome (or
			// still ACTIVE), never the previous one's.
			ran := runs.Load()
			var err error
			tk, err = b.store.GetTask(b.ctx, ids[0])
			require.NoError(t, err)
			return ran == n && tk.Status == wftype.StatusPending && tk.OwnerID == nil
		}, 20*time.Second, 5*time.Millisecond)
		return tk
	}
	for i := 1; i <= 2; i++ {
		tk := waitRuns(int32(i))
		require.Equal(t, 0, tk.RetryCount, "a snooze counts no retry")
		require.Equal(t, i, tk.Snoozes)
		require.Equal(t, "snoozed for 30s: not yet", *tk.Error)
		require.WithinDuration(t, fake.Now().Add(30*time.Second), tk.RunAfter, 5*time.Millisecond)
		b.bus.Publish(signalbus.TaskQueued, "")
		require.Equal(t, int32(i), runs.Load(), "not due before its delay")
		fake.Advance(31 * time.Second)
		b.bus.Publish(signalbus.TaskQueued, "")
	}
	// The third snooze is past max_snoozes (2): a failed attempt.
	tk := waitRuns(3)
	require.Equal(t, 1, tk.RetryCount)
	require.Equal(t, 2, tk.Snoozes)
	require.Contains(t, *tk.Error, "max_snoozes")
	require.WithinDuration(t, fake.Now().Add(time.Hour), tk.RunAfter, 5*time.Millisecond, "the retry's backoff, not the snooze's delay")
	attempts, err := b.store.GetAttempts(b.ctx, ids[0])
	require.NoError(t, err)
	require.Len(t, attempts, 3)
	require.Equal(t, wftype.AttemptSnoozed, attempts[0].Outcome)
	require.Equal(t, wftype.StatusPending, attempts[2].Outcome, "the third, past max_snoozes, a retry")
	require.Equal(t, "snoozed for 30s: not yet", *attempts[0].Error)
}

// TestNULInResultDoesNotPoisonBatch: PostgreSQL's jsonb and text refuse the
// NUL character, which valid JSON (\u0000) and Go strings may hold. One
// handler's outputs or error with a NUL in them must not fail the write of
// the whole batch of outcomes it is in.
func TestNULInResultDoesNotPoisonBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := funcRunner{types: map[string]bool{"ok": true, "nul-out": true, "nul-err": true}, fn: func(_ context.Context, tk *wftype.Task) (json.RawMessage, error) {
		switch tk.TaskType {
		case "nul-out":
			return json.RawMessage(`{"bin":"a\u0000b","\u0000k":1}`), nil
		case "nul-err":
			return nil, errors.New("exit status 1: stderr \x00\x01 garbage")
		}
		return json.RawMessage(`{"ok":true}`), nil
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) { c.FlushInterval = 100 * time.Millisecond })
	stop := runFor(d)
	defer stop()
	ok := enqueue(t, b, "ok", 20, 0)
	out := enqueue(t, b, "nul-out", 1, 0)
	bad := enqueue(t, b, "nul-err", 1, 0)
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == 21 }, 10*time.Second, 10*time.Millisecond)
	tk, err := b.store.GetTask(b.ctx, ok[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, string(tk.Outputs))
	tk, err = b.store.GetTask(b.ctx, out[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"bin":"a\ufffdb","\ufffdk":1}`, string(tk.Outputs))
	require.Eventually(t, func() bool {
		tk, _ = b.store.GetTask(b.ctx, bad[0])
		return tk.Status == wftype.StatusDeadLetter
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "exit status 1: stderr \ufffd\x01 garbage", *tk.Error)
}

// TestTimedOutRunThatIgnoresCancelLetsLeaseExpire: a run past its timeout
// whose handler ignores the cancellation must not hold its task forever by
// heartbeating: its lease is left to expire, so the janitor retries it or
// dead-letters it like any run that exceeded its timeout.
func TestTimedOutRunThatIgnoresCancelLetsLeaseExpire(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The test's clock, ahead of the database's so the tasks are due.
	fake := clock.NewFake(clock.Now().UTC().Add(time.Minute))
	started := make(chan struct{})
	cancelled := make(chan struct{})
	release := make(chan struct{})
	r := funcRunner{types: map[string]bool{"stuck": true}, fn: func(ctx context.Context, _ *wftype.Task) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		<-release
		return nil, nil
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.HeartbeatInterval = time.Hour // beats are run by the test
		c.Clock = fake
		c.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: "stuck"}] = execution.Rule{Timeout: 50 * time.Millisecond, Lease: time.Minute}
	})
	stop := runFor(d)
	defer stop()
	defer close(release)
	ids := enqueue(t, b, "stuck", 1, 3)
	<-started
	fake.Advance(100 * time.Millisecond) // past the run timeout
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not cancelled at its timeout")
	}
	lease := func() time.Time {
		tk, err := b.store.GetTask(b.ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, wftype.StatusActive, tk.Status)
		return *tk.LockedUntil
	}
	// Right after the timeout the run may still be ending: one more beat.
	require.NoError(t, d.Beat(b.ctx))
	before := lease()
	fake.Advance(100 * time.Millisecond) // an extension would move the lease
	require.NoError(t, d.Beat(b.ctx))
	require.Equal(t, before, lease(), "the lease of a run that ignores its timeout is still extended")
}

// TestHeartbeatFailingPastLeaseCancels: while heartbeats cannot reach the
// database, a run whose lease has ended by now is stopped: the janitor of
// another instance may already have handed its task on.
func TestHeartbeatFailingPastLeaseCancels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan context.Context, 1)
	r := funcRunner{types: map[string]bool{"long": true}, fn: func(ctx context.Context, _ *wftype.Task) (json.RawMessage, error) {
		started <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	// The test's clock, ahead of the database's so the tasks are due.
	fake := clock.NewFake(clock.Now().UTC().Add(time.Minute))
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.HeartbeatInterval = time.Hour // beats are run by the test
		c.Grace = 50 * time.Millisecond
		c.Clock = fake
		c.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: "long"}] = execution.Rule{Lease: 300 * time.Millisecond}
	})
	stop := runFor(d)
	defer stop()
	enqueue(t, b, "long", 1, 3)
	runCtx := <-started
	require.NoError(t, d.Beat(b.ctx))

	// A heartbeat that cannot reach the database within the lease keeps the
	// run; one that fails after the lease ended stops it.
	failing, cancel := context.WithCancel(b.ctx)
	cancel()
	require.Error(t, d.Beat(failing))
	require.NoError(t, runCtx.Err())
	fake.Advance(400 * time.Millisecond) // past the lease
	require.Error(t, d.Beat(failing))
	select {
	case <-runCtx.Done():
		require.ErrorContains(t, context.Cause(runCtx), "lease lost")
	case <-time.After(5 * time.Second):
		t.Fatal("run not cancelled though its lease ran out while heartbeats failed")
	}
}

// TestHeartbeatAndShutdownOnTheClock: the dispatcher's heartbeat and its
// shutdown's grace period are reckoned on its clock. With a test's clock, a
// beat comes when the test moves the clock by an interval (extending the
// lease from the clock's time); a stop waits, with a handler that ignores
// its cancellation, until the clock passes the grace period (an hour that
// no one waits for), then hands the task back and returns once the clock
// passes the few seconds it gives cancelled runs.
func TestHeartbeatAndShutdownOnTheClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The test's clock, ahead of the database's so the tasks are due.
	fake := clock.NewFake(clock.Now().UTC().Add(time.Minute).Truncate(time.Millisecond))
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	r := funcRunner{types: map[string]bool{"stuck": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		close(started)
		<-release // ignores its context
		return nil, nil
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.HeartbeatInterval = 10 * time.Second
		c.Grace = time.Hour
		c.Clock = fake
		c.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: "stuck"}] = execution.Rule{Lease: time.Minute, Timeout: 24 * time.Hour}
	})
	stop := runFor(d)
	ids := enqueue(t, b, "stuck", 1, 3)
	<-started
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, fake.AwaitWaiters(ctx, 2), "the heartbeat's ticker and the deadlines' timer wait on the clock")

	task := func() wftype.Task {
		tk, err := b.store.GetTask(b.ctx, ids[0])
		require.NoError(t, err)
		return tk
	}
	for range 3 {
		fake.Advance(10 * time.Second)
		want := fake.Now().Add(time.Minute)
		require.Eventually(t, func() bool { return task().LockedUntil.Equal(want) }, 30*time.Second, 5*time.Millisecond,
			"a beat extends the lease from the clock's time")
	}

	stopped := make(chan struct{})
	go func() { defer close(stopped); stop() }()
	require.NoError(t, fake.AwaitWaiters(ctx, 3), "the grace period waits on the clock")
	select {
	case <-stopped:
		t.Fatal("Run returned before the grace period passed")
	default:
	}
	require.Equal(t, wftype.StatusActive, task().Status)
	fake.Advance(time.Hour)
	require.Eventually(t, func() bool { return task().Status == wftype.StatusPending }, 30*time.Second, 5*time.Millisecond,
		"handed back after the grace period")
	// The heartbeat and the deadlines stop meanwhile; the wait for the
	// cancelled run starts: move the clock until Run returns.
	require.Eventually(t, func() bool {
		fake.Advance(time.Second)
		select {
		case <-stopped:
			return true
		default:
			return false
		}
	}, 30*time.Second, 5*time.Millisecond, "Run did not return once the clock passed the wait for cancelled runs")
}
