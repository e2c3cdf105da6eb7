package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/worker"
	"github.com/wfhq/wf/wftype"
)

// jobRule configures the worker with rule as the rule of task type job.
func jobRule(rule execution.Rule) func(*worker.Config) {
	return func(c *worker.Config) {
		c.Rules = execution.Rules{{Mode: wftype.ModeAsync, TaskType: "job"}: rule}
	}
}

// quiet discards the logs of the workers a test builds beside its bundle's.
var quiet = slog.New(slog.DiscardHandler)

func succeed(context.Context, *wftype.Task) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// requireUntouched checks that task is still PENDING and never claimed.
func (b *bundle) requireUntouched(t *testing.T, task wftype.Task) {
	t.Helper()
	cur, err := b.store.GetTask(t.Context(), task.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusPending, cur.Status)
	require.Zero(t, cur.Attempts, "the refused take claimed nothing")
}

// rateStarts returns the starts counted in tenant's rate window of job
// (schema_name "" is the type's own window), and that window's start.
func (b *bundle) rateStarts(t *testing.T, tenant string) (int, time.Time) {
	t.Helper()
	var n int
	var start time.Time
	err := b.store.DB().QueryRow(t.Context(), `
SELECT coalesce(sum(starts), 0)::int, coalesce(max(window_start), 'epoch')
FROM tasks.rate_windows WHERE task_type = 'job' AND schema_name = $1`, tenant).Scan(&n, &start)
	require.NoError(t, err)
	return n, start.UTC()
}

// TestTakeKeepsTheTenantCap: a worker that takes a PENDING task itself
// (wf exec --task-id) keeps its type's concurrency.per_tenant as a claim
// does: beside the tenant's ACTIVE task it refuses, naming the limit and
// claiming nothing; a forced worker takes it.
func TestTakeKeepsTheTenantCap(t *testing.T) {
	t.Parallel()
	capped := jobRule(execution.Rule{PerTenant: 1})
	b := setup(t, succeed, capped)
	b.enqueue(t, "running")
	b.claimAs(t, "engine-a")
	second := b.enqueue(t, "second")

	_, err := b.worker.Take(t.Context(), second.ID, store.WorkerLease{})
	var busy *worker.BusyError
	require.ErrorAs(t, err, &busy)
	require.ErrorIs(t, err, worker.ErrBusy)
	require.Equal(t, store.HeldPerTenant, busy.Reason)
	require.Contains(t, err.Error(), "concurrency.per_tenant")
	require.Zero(t, busy.RetryAfter, "room comes back when a run ends, not at a time")
	b.requireUntouched(t, second)

	forced, err := worker.New(worker.Config{Store: b.store, Owner: "worker-2", Logger: quiet, Force: true,
		Rules: execution.Rules{{Mode: wftype.ModeAsync, TaskType: "job"}: {PerTenant: 1}}})
	require.NoError(t, err)
	c, err := forced.Take(t.Context(), second.ID, store.WorkerLease{})
	require.NoError(t, err)
	require.Equal(t, wftype.StatusActive, c.Task.Status)
}

// TestOwnClaimsCountInTheRateWindow: the starts a worker claims itself, by
// Create and by Take, count in the type's rate windows (type and tenant,
// on the worker's clock), so a claim after them finds the window used; a
// start past the window's room is refused with the time left in the window,
// and a forced one is counted too.
func TestOwnClaimsCountInTheRateWindow(t *testing.T) {
	t.Parallel()
	// 45 seconds before the end of an hour's window, far from the
	// database's clock: the windows are the worker's clock's.
	fake := clock.NewFake(time.Date(2031, 3, 4, 10, 59, 15, 0, time.UTC))
	rated := execution.Rule{RateStarts: 5, RatePerTenant: 2, RateInterval: time.Hour}
	b := setup(t, succeed, jobRule(rated), func(c *worker.Config) { c.Clock = fake })
	cl := client.New(b.store, b.specs)
	window := time.Date(2031, 3, 4, 10, 0, 0, 0, time.UTC)

	_, err := b.worker.Create(t.Context(), cl, client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "a"}`)})
	require.NoError(t, err)
	n, start := b.rateStarts(t, wftype.SystemSchema)
	require.Equal(t, 1, n, "Create counted its start in the tenant's window")
	require.Equal(t, window, start)

	pending := b.enqueue(t, "b")
	_, err = b.worker.Take(t.Context(), pending.ID, store.WorkerLease{})
	require.NoError(t, err)
	n, _ = b.rateStarts(t, wftype.SystemSchema)
	require.Equal(t, 2, n, "Take counted its start in the tenant's window")
	n, _ = b.rateStarts(t, "")
	require.Equal(t, 2, n, "and in the type's")

	third := b.enqueue(t, "c")
	_, err = b.worker.Take(t.Context(), third.ID, store.WorkerLease{})
	var busy *worker.BusyError
	require.ErrorAs(t, err, &busy)
	require.Equal(t, store.HeldRate, busy.Reason)
	require.Equal(t, 45*time.Second, busy.RetryAfter, "the rest of the window")
	b.requireUntouched(t, third)
	_, err = b.worker.Create(t.Context(), cl, client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "d"}`)})
	require.ErrorAs(t, err, &busy)
	require.Equal(t, 45*time.Second, busy.RetryAfter)
	var created int
	require.NoError(t, b.store.DB().QueryRow(t.Context(), `SELECT count(*) FROM tasks.tasks WHERE task_type = 'job'`).Scan(&created))
	require.Equal(t, 3, created, "the refused Create created nothing")

	forced, err := worker.New(worker.Config{Store: b.store, Owner: "worker-2", Logger: quiet, Force: true, Clock: fake,
		Rules: execution.Rules{{Mode: wftype.ModeAsync, TaskType: "job"}: rated}})
	require.NoError(t, err)
	_, err = forced.Take(t.Context(), third.ID, store.WorkerLease{})
	require.NoError(t, err)
	n, _ = b.rateStarts(t, wftype.SystemSchema)
	require.Equal(t, 3, n, "the forced start counts too")

	fake.Advance(45 * time.Second)
	_, err = b.worker.Create(t.Context(), cl, client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "d"}`)})
	require.NoError(t, err, "a new window has room")
	n, start = b.rateStarts(t, wftype.SystemSchema)
	require.Equal(t, 1, n)
	require.Equal(t, window.Add(time.Hour), start)
}

// TestOwnClaimsHonourPauses: with CheckPauses (wf exec), a paused task type
// or tenant stops the worker's own claims, by Take and by Create, which
// change nothing; a forced worker, and one without CheckPauses (the HTTP
// API's synchronous runs, which a pause does not hold), claim.
func TestOwnClaimsHonourPauses(t *testing.T) {
	t.Parallel()
	b := setup(t, succeed, func(c *worker.Config) { c.CheckPauses = true })
	cl := client.New(b.store, b.specs)
	pending := b.enqueue(t, "a")

	for _, p := range []store.PauseParams{
		{Kind: store.PauseTaskType, Name: "job", Reason: "bucket quota"},
		{Kind: store.PauseTenant, Name: wftype.SystemSchema},
	} {
		_, _, err := b.store.PauseQueue(t.Context(), p)
		require.NoError(t, err)
		_, err = b.worker.Take(t.Context(), pending.ID, store.WorkerLease{})
		var paused *worker.PausedError
		require.ErrorAs(t, err, &paused, "paused %s", p.Kind)
		require.ErrorIs(t, err, worker.ErrPaused)
		require.Equal(t, p.Kind, paused.Pause.Kind)
		require.Contains(t, err.Error(), p.Name+" is paused")
		b.requireUntouched(t, pending)
		_, err = b.worker.Create(t.Context(), cl, client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "new"}`)})
		require.ErrorIs(t, err, worker.ErrPaused)
		_, err = b.store.ResumeQueue(t.Context(), p.Kind, p.Name)
		require.NoError(t, err)
	}
	var created int
	require.NoError(t, b.store.DB().QueryRow(t.Context(), `SELECT count(*) FROM tasks.tasks`).Scan(&created))
	require.Equal(t, 1, created, "the refused Creates created nothing")

	_, _, err := b.store.PauseQueue(t.Context(), store.PauseParams{Kind: store.PauseTaskType, Name: "job"})
	require.NoError(t, err)
	forced, err := worker.New(worker.Config{Store: b.store, Owner: "worker-2", Logger: quiet, CheckPauses: true, Force: true})
	require.NoError(t, err)
	_, err = forced.Take(t.Context(), pending.ID, store.WorkerLease{})
	require.NoError(t, err)
	unchecked, err := worker.New(worker.Config{Store: b.store, Owner: "worker-3", Logger: quiet})
	require.NoError(t, err)
	_, err = unchecked.Create(t.Context(), cl, client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "sync"}`)})
	require.NoError(t, err)
}
