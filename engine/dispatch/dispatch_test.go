package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// funcRunner runs every task of its types with fn: an in-process handler, as
// the builtin runner does.
type funcRunner struct {
	types map[string]bool
	fn    func(ctx context.Context, t *wftype.Task) (json.RawMessage, error)
}

func (r funcRunner) Name() string  { return "func" }
func (r funcRunner) Priority() int { return 100 }
func (r funcRunner) CanHandle(m wftype.ExecutionMode, tt string) bool {
	return m == wftype.ModeAsync && r.types[tt]
}
func (r funcRunner) Run(ctx context.Context, t *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	return r.fn(ctx, t)
}

type bundle struct {
	ctx   context.Context
	store *store.Store
	bus   *signalbus.Bus
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{ctx: context.Background(), store: dbtest.NewStore(t), bus: signalbus.New()}
}

func (b *bundle) dispatcher(t *testing.T, owner string, r runners.Runner, mutate func(*dispatch.Config)) *dispatch.Dispatcher {
	t.Helper()
	pairs := []runners.Pair{}
	for tt := range r.(funcRunner).types {
		pairs = append(pairs, runners.Pair{Mode: wftype.ModeAsync, TaskType: tt})
	}
	cfg := dispatch.Config{
		Store: b.store, Owner: owner, Bus: b.bus, Slots: 50,
		Capabilities: runners.BuildCapabilityMap([]runners.Runner{r}, pairs),
		Rules:        map[runners.Pair]execution.Rule{},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	d, err := dispatch.New(cfg)
	require.NoError(t, err)
	return d
}

// runFor runs d until stop is called; stop waits for Run to return.
func runFor(d *dispatch.Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	return func() { cancel(); <-done }
}

func enqueue(t *testing.T, b *bundle, taskType string, n, maxRetries int) []uuid.UUID {
	t.Helper()
	batch := make([]store.NewTask, n)
	for i := range batch {
		batch[i] = store.NewTask{SchemaName: "system", Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync,
			TaskType: taskType, MaxRetries: maxRetries, Inputs: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	res, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	ids := make([]uuid.UUID, n)
	for i, r := range res {
		ids[i] = r.Task.ID
	}
	b.bus.Publish(signalbus.TaskQueued, taskType)
	return ids
}

func countStatus(t *testing.T, b *bundle, status wftype.TaskStatus) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.DB().QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE status = $1`, string(status)).Scan(&n))
	return n
}

// TestManyDispatchersRunEachTaskOnce: three dispatchers share 3,000 tasks;
// every task completes and runs exactly once.
func TestManyDispatchersRunEachTaskOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	runs := map[uuid.UUID]int{}
	r := funcRunner{types: map[string]bool{"count": true}, fn: func(_ context.Context, tk *wftype.Task) (json.RawMessage, error) {
		mu.Lock()
		runs[tk.ID]++
		mu.Unlock()
		return json.RawMessage(`{"ok":true}`), nil
	}}
	ids := enqueue(t, b, "count", 3000, 3)
	for i := range 3 {
		stop := runFor(b.dispatcher(t, fmt.Sprintf("w%d", i), r, nil))
		defer stop()
	}
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == 3000 }, 60*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, runs, 3000)
	for _, id := range ids {
		require.Equal(t, 1, runs[id], id)
	}
}

// TestRetryBackoffAndDeadLetter drives retries with a fake clock: a failing
// task waits out each backoff, then lands in DEAD_LETTER with an event.
func TestRetryBackoffAndDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := clock.NewFake(clock.Now().UTC().Add(time.Minute))
	var attempts atomic.Int32
	r := funcRunner{types: map[string]bool{"flaky": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		attempts.Add(1)
		return nil, errors.New("upstream down")
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Clock = fake
		c.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: "flaky"}] = execution.Rule{
			Backoff: func(n int) time.Duration { return time.Duration(1<<n) * time.Second },
		}
	})
	stop := runFor(d)
	defer stop()
	ids := enqueue(t, b, "flaky", 1, 2)

	waitFor := func(status wftype.TaskStatus, retries int) wftype.Task {
		var tk wftype.Task
		require.Eventually(t, func() bool {
			var err error
			tk, err = b.store.GetTask(b.ctx, ids[0])
			require.NoError(t, err)
			return tk.Status == status && tk.RetryCount == retries
		}, 10*time.Second, 5*time.Millisecond)
		return tk
	}
	tk := waitFor(wftype.StatusPending, 1)
	require.Equal(t, "upstream down", *tk.Error)
	require.WithinDuration(t, fake.Now().Add(time.Second), tk.RunAfter, 5*time.Millisecond)
	// Not due yet: a wake-up claims nothing.
	b.bus.Publish(signalbus.TaskQueued, "")
	require.Equal(t, int32(1), attempts.Load())

	fake.Advance(1100 * time.Millisecond)
	b.bus.Publish(signalbus.TaskQueued, "")
	tk = waitFor(wftype.StatusPending, 2)
	require.WithinDuration(t, fake.Now().Add(2*time.Second), tk.RunAfter, 5*time.Millisecond)

	fake.Advance(2100 * time.Millisecond)
	b.bus.Publish(signalbus.TaskQueued, "")
	tk = waitFor(wftype.StatusDeadLetter, 2)
	require.Equal(t, int32(3), attempts.Load())
	require.Equal(t, 3, tk.Attempts)
	var evType string
	require.NoError(t, b.store.DB().QueryRow(b.ctx, `SELECT event_type FROM tasks.events WHERE payload->>'task_id' = $1`, ids[0].String()).Scan(&evType))
	require.Equal(t, "task.dead_lettered", evType)
}

func TestPermanentFailureFailsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := funcRunner{types: map[string]bool{"bad": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		return nil, wftype.Permanent(errors.New("bad input"))
	}}
	stop := runFor(b.dispatcher(t, "w1", r, nil))
	defer stop()
	ids := enqueue(t, b, "bad", 1, 5)
	require.Eventually(t, func() bool {
		tk, _ := b.store.GetTask(b.ctx, ids[0])
		return tk.Status == wftype.StatusFailed
	}, 10*time.Second, 5*time.Millisecond)
}

// TestCancelStopsRunner: cancelling an ACTIVE task cancels its run's context
// and its result is discarded.
func TestCancelStopsRunner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	r := funcRunner{types: map[string]bool{"block": true}, fn: func(ctx context.Context, _ *wftype.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return nil, ctx.Err()
	}}
	stop := runFor(b.dispatcher(t, "w1", r, nil))
	defer stop()
	ids := enqueue(t, b, "block", 1, 3)
	<-started
	_, err := b.store.CancelTask(b.ctx, ids[0])
	require.NoError(t, err)
	// The leader forwards the notification to the bus; do what it does.
	b.bus.Publish(signalbus.TaskStatusChanged, "CANCELLED:"+ids[0].String())
	select {
	case cause := <-stopped:
		require.ErrorContains(t, cause, "lease lost")
	case <-time.After(10 * time.Second):
		t.Fatal("runner not cancelled")
	}
	tk, _ := b.store.GetTask(b.ctx, ids[0])
	require.Equal(t, wftype.StatusCancelled, tk.Status)
}

// TestHeartbeatLostLeaseCancels: a task rescued elsewhere (owner changed)
// is cancelled at the next heartbeat.
func TestHeartbeatLostLeaseCancels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{}, 1)
	stopped := make(chan struct{})
	r := funcRunner{types: map[string]bool{"block": true}, fn: func(ctx context.Context, _ *wftype.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) { c.HeartbeatInterval = time.Hour })
	stop := runFor(d)
	defer stop()
	ids := enqueue(t, b, "block", 1, 3)
	<-started
	require.NoError(t, d.Beat(b.ctx))
	_, err := b.store.DB().Exec(b.ctx, `UPDATE tasks.tasks SET owner_id = 'thief' WHERE task_id = $1`, ids[0])
	require.NoError(t, err)
	require.NoError(t, d.Beat(b.ctx))
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("runner not cancelled after losing its lease")
	}
}

// TestShutdownHandsBackUnfinished: tasks still running after the grace period

// heldCounted is a run that counts itself in cur while it runs, keeps in
// peak the most that ran at once, and ends when release is closed.
func heldCounted(cur, peak *atomic.Int32, release <-chan struct{}) func(context.Context, *wftype.Task) (json.RawMessage, error) {
	return func(context.Context, *wftype.Task) (json.RawMessage, error) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		cur.Add(-1)
		return nil, nil
	}
}

// go back to PENDING at once, with no retry counted; finished ones are written.
func TestShutdownHandsBackUnfinished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{}, 10)
	r := funcRunner{types: map[string]bool{"block": true, "quick": true}, fn: func(ctx context.Context, tk *wftype.Task) (json.RawMessage, error) {
		if tk.TaskType == "quick" {
			return nil, nil
		}
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) { c.Grace = 50 * time.Millisecond })
	stop := runFor(d)
	blocked := enqueue(t, b, "block", 3, 3)
	quick := enqueue(t, b, "quick", 5, 3)
	for range 3 {
		<-started
	}
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == 5 }, 10*time.Second, 5*time.Millisecond)
	stop()
	for _, id := range blocked {
		tk, err := b.store.GetTask(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, wftype.StatusPending, tk.Status)
		require.Equal(t, 0, tk.RetryCount)
		require.Equal(t, 0, tk.Attempts)
		require.Nil(t, tk.OwnerID)
	}
	for _, id := range quick {
		tk, _ := b.store.GetTask(b.ctx, id)
		require.Equal(t, wftype.StatusCompleted, tk.Status)
	}
}

func TestPerInstanceLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var cur, peak atomic.Int32
	release := make(chan struct{})
	r := funcRunner{types: map[string]bool{"limited": true}, fn: heldCounted(&cur, &peak, release)}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: "limited"}] = execution.Rule{PerInstance: 3}
	})
	stop := runFor(d)
	defer stop()
	enqueue(t, b, "limited", 10, 0)
	require.Eventually(t, func() bool { return cur.Load() == 3 }, 10*time.Second, 5*time.Millisecond)
	b.bus.Publish(signalbus.TaskQueued, "")
	require.Equal(t, 3, d.Running())
	close(release)
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == 10 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int32(3), peak.Load())
}

// TestPerInstanceLimitSharedWithOtherRuns: the runs the dispatcher's
// InstanceRuns counts besides its own (an API's SYNCHRONOUS runs in the
// same instance) take their room under concurrency.per_instance: with a
// cap of 2 and one such run, the dispatcher runs one task of the type,
// and leaves the others PENDING while a claim made after them runs
// another type's task. When that run ends, the dispatcher is woken (no
// task is queued, no poll runs here) and starts a second.
func TestPerInstanceLimitSharedWithOtherRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var cur, peak atomic.Int32
	release := make(chan struct{})
	limited := heldCounted(&cur, &peak, release)
	r := funcRunner{types: map[string]bool{"limited": true, "other": true}, fn: func(ctx context.Context, task *wftype.Task) (json.RawMessage, error) {
		if task.TaskType == "other" {
			return nil, nil
		}
		return limited(ctx, task)
	}}
	pair := runners.Pair{Mode: wftype.ModeAsync, TaskType: "limited"}
	shared := execution.NewInstanceRuns()
	ok, err := shared.Acquire(b.ctx, pair, 2)
	require.NoError(t, err)
	require.True(t, ok)
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Rules[pair] = execution.Rule{PerInstance: 2}
		c.InstanceRuns = shared
	})
	stop := runFor(d)
	defer stop()
	enqueue(t, b, "limited", 3, 0)
	require.Eventually(t, func() bool { return cur.Load() == 1 }, 30*time.Second, 5*time.Millisecond)
	// Queued after the limited tasks: the claim that takes it sees them
	// due, with slots free.
	other := enqueue(t, b, "other", 1, 0)
	require.Eventually(t, func() bool {
		tk, err := b.store.GetTask(b.ctx, other[0])
		require.NoError(t, err)
		return tk.Status == wftype.StatusCompleted
	}, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, countStatus(t, b, wftype.StatusActive), "the other run holds the second slot")
	require.Equal(t, 2, countStatus(t, b, wftype.StatusPending))

	shared.Release(pair, 1) // the other run ends
	require.Eventually(t, func() bool { return cur.Load() == 2 }, 30*time.Second, 5*time.Millisecond)
	close(release)
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == 4 }, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, int32(2), peak.Load())
}
