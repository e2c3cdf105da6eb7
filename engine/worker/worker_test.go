package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/worker"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// stepRunner runs every task of type "job" with fn.
type stepRunner struct {
	fn func(ctx context.Context, t *wftype.Task) (json.RawMessage, error)
}

func (stepRunner) Name() string                                     { return "step" }
func (stepRunner) Priority() int                                    { return 100 }
func (stepRunner) CanHandle(m wftype.ExecutionMode, tt string) bool { return tt == "job" }
func (r stepRunner) Run(ctx context.Context, t *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	return r.fn(ctx, t)
}

type bundle struct {
	store  *store.Store
	specs  *spec.Set
	worker *worker.Worker
}

func setup(t *testing.T, fn func(ctx context.Context, t *wftype.Task) (json.RawMessage, error), opts ...func(*worker.Config)) *bundle {
	t.Helper()
	specs, err := spec.Compile([]spec.Source{{Name: "job.yaml", Data: []byte(`kind: TaskType
name: job
description: A job.
handler: {builtin: step}
max_retries: 3
dedup_key: inputs.key
inputs: {type: object}
`)}}, spec.Options{Builtins: []string{"step"}})
	require.NoError(t, err)
	st := dbtest.NewStore(t)
	pair := runners.Pair{Mode: wftype.ModeAsync, TaskType: "job"}
	cfg := worker.Config{
		Store: st, Owner: "worker-1", HeartbeatInterval: 20 * time.Millisecond,
		Capabilities: runners.CapabilityMap{pair: stepRunner{fn: fn}},
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	w, err := worker.New(cfg)
	require.NoError(t, err)
	return &bundle{store: st, specs: specs, worker: w}
}

func (b *bundle) enqueue(t *testing.T, key string) wftype.Task {
	t.Helper()
	res, err := client.New(b.store, b.specs).Enqueue(t.Context(), client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "` + key + `"}`)})
	require.NoError(t, err)
	return res.Task
}

func (b *bundle) claimAs(t *testing.T, owner string) wftype.Task {
	t.Helper()
	tasks, err := b.store.ClaimTasks(t.Context(), store.ClaimParams{Owner: owner, Total: 1,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "job", Max: 1, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	return tasks[0]
}

// TestStaleClaimCannotWrite: a worker handed an earlier claim of a task that
// its owner has since claimed again (a retry) must not write its result over
// the later attempt, although the owner id is the same: the attempt in the
// lease tells them apart.
func TestStaleClaimCannotWrite(t *testing.T) {
	t.Parallel()
	var b *bundle
	var retried atomic.Bool
	b = setup(t, func(_ context.Context, task *wftype.Task) (json.RawMessage, error) {
		// While this worker runs attempt 1, the dispatcher gives up on it
		// (a retry) and claims the task again: attempt 2, same owner. That
		// is another party's work, on the test's context: the run's is
		// cancelled as soon as the worker's lease keeper sees the lease go
		// (a busy machine's heartbeat could come between these statements).
		_, err := b.store.FinishTasks(t.Context(), store.FinishParams{Owner: "engine-a"},
			[]store.Finish{{ID: task.ID, Status: wftype.StatusPending, RetryCount: 1}})
		require.NoError(t, err)
		again := b.claimAs(t, "engine-a")
		require.Equal(t, 2, again.Attempts)
		retried.Store(true)
		return json.RawMessage(`{"stale": true}`), nil
	})
	task := b.enqueue(t, "a")
	claimed := b.claimAs(t, "engine-a")
	require.Equal(t, task.ID, claimed.ID)

	c, err := b.worker.Take(t.Context(), task.ID, store.WorkerLease{Owner: "engine-a", Attempt: 1})
	require.NoError(t, err)
	require.False(t, c.Own)
	_, err = b.worker.Run(t.Context(), c)
	require.True(t, retried.Load())
	require.ErrorIs(t, err, worker.ErrLeaseLost)
	cur, err := b.store.GetTask(t.Context(), task.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusActive, cur.Status, "attempt 2 is untouched")
	require.Equal(t, 2, cur.Attempts)
	require.Nil(t, cur.Outputs)
}

// TestTakeAndCreate: the ways a worker takes a task, and those it refuses.
func TestTakeAndCreate(t *testing.T) {
	t.Parallel()
	b := setup(t, func(context.Context, *wftype.Task) (json.RawMessage, error) {
		return json.RawMessage(`{"ok": true}`), nil
	})
	cl := client.New(b.store, b.specs)

	c, err := b.worker.Create(t.Context(), cl, client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "k"}`)})
	require.NoError(t, err)
	require.True(t, c.Own)
	require.Equal(t, wftype.StatusActive, c.Task.Status, "created and claimed in one transaction")
	require.Equal(t, store.WorkerLease{Owner: "worker-1", Attempt: 1}, c.Lease)

	// The dedup key is held by the task just created, which is ACTIVE.
	_, err = b.worker.Create(t.Context(), cl, client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "k"}`)})
	require.ErrorIs(t, err, wftype.ErrConflict)

	res, err := b.worker.Run(t.Context(), c)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCompleted, res.Status)
	require.JSONEq(t, `{"ok": true}`, string(res.Task.Outputs))

	_, err = b.worker.Take(t.Context(), c.Task.ID, store.WorkerLease{})
	var fin *worker.FinishedError
	require.ErrorAs(t, err, &fin)
	require.Equal(t, wftype.StatusCompleted, fin.Task.Status)

	pending := b.enqueue(t, "p")
	_, err = b.worker.Take(t.Context(), pending.ID, store.WorkerLease{Owner: "engine-a"})
	require.ErrorIs(t, err, wftype.ErrConflict, "a lease is for an ACTIVE task only")
	c, err = b.worker.Take(t.Context(), pending.ID, store.WorkerLease{})
	require.NoError(t, err)
	require.True(t, c.Own)

	_, err = b.worker.Take(t.Context(), c.Task.ID, store.WorkerLease{})
	require.ErrorIs(t, err, wftype.ErrConflict, "an ACTIVE task needs its lease")
	_, err = b.worker.Take(t.Context(), c.Task.ID, store.WorkerLease{Owner: "worker-1", Attempt: 2})
	require.ErrorIs(t, err, wftype.ErrConflict)
	taken, err := b.worker.Take(t.Context(), c.Task.ID, store.WorkerLease{Owner: "worker-1", Attempt: 1})
	require.NoError(t, err)
	require.False(t, taken.Own)
	require.False(t, errors.Is(err, wftype.ErrNotFound))
}

// TestStaleClaimStopsAtNextBeat: a worker whose claim was superseded by a
// later claim of the same owner learns it at its next lease extension and
// stops, without keeping the later claim's lease alive.
func TestStaleClaimStopsAtNextBeat(t *testing.T) {
	t.Parallel()
	var b *bundle
	b = setup(t, func(ctx context.Context, task *wftype.Task) (json.RawMessage, error) {
		_, err := b.store.FinishTasks(ctx, store.FinishParams{Owner: "engine-a"},
			[]store.Finish{{ID: task.ID, Status: wftype.StatusPending, RetryCount: 1}})
		require.NoError(t, err)
		b.claimAs(t, "engine-a")
		<-ctx.Done() // a long run, stopped by the lost lease
		return nil, ctx.Err()
	})
	task := b.enqueue(t, "a")
	b.claimAs(t, "engine-a")
	c, err := b.worker.Take(t.Context(), task.ID, store.WorkerLease{Owner: "engine-a", Attempt: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = b.worker.Run(ctx, c)
	require.ErrorIs(t, err, worker.ErrLeaseLost)
	require.NoError(t, ctx.Err(), "stopped by the heartbeat, not by the test's deadline")
}

// TestLeaseAndTimeoutOnTheClock: the worker's heartbeat and its run timeout
// are reckoned on its clock. With a test's clock, a beat comes when the
// test moves the clock by an interval (and extends the lease from the
// clock's time), and the run is stopped, and retried, when the clock passes
// its timeout: no wall time is waited for either.
func TestLeaseAndTimeoutOnTheClock(t *testing.T) {
	t.Parallel()
	// Ahead of the database's clock, so the task is due.
	fake := clock.NewFake(clock.Now().UTC().Add(time.Minute).Truncate(time.Millisecond))
	started := make(chan struct{})
	b := setup(t, func(ctx context.Context, _ *wftype.Task) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}, func(c *worker.Config) {
		c.Clock = fake
		c.HeartbeatInterval = 10 * time.Second
		c.Rules = execution.Rules{{Mode: wftype.ModeAsync, TaskType: "job"}: {Lease: time.Minute, Timeout: time.Hour}}
	})
	task := b.enqueue(t, "a")
	c, err := b.worker.Take(t.Context(), task.ID, store.WorkerLease{})
	require.NoError(t, err)
	type ran struct {
		res worker.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := b.worker.Run(t.Context(), c)
		done <- ran{res, err}
	}()
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, fake.AwaitWaiters(ctx, 2), "the heartbeat's ticker and the run's timeout wait on the clock")

	lockedUntil := func() time.Time {
		cur, err := b.store.GetTask(t.Context(), task.ID)
		require.NoError(t, err)
		require.NotNil(t, cur.LockedUntil)
		return cur.LockedUntil.UTC()
	}
	for range 3 {
		fake.Advance(10 * time.Second)
		want := fake.Now().Add(time.Minute)
		require.Eventually(t, func() bool { return lockedUntil().Equal(want) }, 30*time.Second, 5*time.Millisecond,
			"a beat extends the lease from the clock's time")
	}

	fake.Advance(time.Hour)
	var r ran
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("the run was not stopped when the clock passed its timeout")
	}
	require.NoError(t, r.err)
	require.ErrorIs(t, r.res.RunErr, execution.ErrTimeout)
	require.Equal(t, wftype.StatusPending, r.res.Status, "a timed-out run is retried")
}
