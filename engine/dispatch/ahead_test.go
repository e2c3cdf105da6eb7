package dispatch_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/wftype"
)

// claimSizes records the largest claim (execution.Observer).
type claimSizes struct{ largest atomic.Int64 }

func (c *claimSizes) Claimed(tasks []wftype.Task, _ time.Duration) {
	for n := int64(len(tasks)); ; {
		old := c.largest.Load()
		if n <= old || c.largest.CompareAndSwap(old, n) {
			return
		}
	}
}
func (c *claimSizes) Finished(*wftype.Task, wftype.TaskStatus, time.Duration) {}

// TestClaimAheadKeepsSlots: with short tasks the dispatcher claims more
// than its free slots (the rest wait for a slot), yet never runs more than
// Slots at once, and every task runs exactly once.
func TestClaimAheadKeepsSlots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	runs := map[uuid.UUID]int{}
	var cur, peak atomic.Int32
	r := funcRunner{types: map[string]bool{"quick": true}, fn: func(_ context.Context, tk *wftype.Task) (json.RawMessage, error) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		mu.Lock()
		runs[tk.ID]++
		mu.Unlock()
		return nil, nil
	}}
	sizes := &claimSizes{}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) { c.Slots, c.Observer = 4, sizes })
	stop := runFor(d)
	defer stop()
	ids := enqueue(t, b, "quick", 600, 0)
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == 600 }, 2*time.Minute, 10*time.Millisecond)
	require.LessOrEqual(t, peak.Load(), int32(4), "never more than Slots run at once")
	require.Greater(t, sizes.largest.Load(), int64(4), "claims took more than the free slots")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, runs, len(ids))
	for _, id := range ids {
		require.Equal(t, 1, runs[id], "task %s", id)
	}
}

// aheadBundle runs a one-slot dispatcher, claiming at most one ahead, whose
// "block" tasks wait for release, after 20 quick tasks taught it that tasks
// are short (so it claims one ahead).
type aheadBundle struct {
	*bundle
	d       *dispatch.Dispatcher
	stop    func()
	started chan uuid.UUID
	release chan struct{}
}

func setupAhead(t *testing.T) *aheadBundle {
	t.Helper()
	ab := &aheadBundle{bundle: setup(t), started: make(chan uuid.UUID, 10), release: make(chan struct{})}
	r := funcRunner{types: map[string]bool{"block": true, "quick": true}, fn: func(ctx context.Context, tk *wftype.Task) (json.RawMessage, error) {
		if tk.TaskType == "quick" {
			return nil, nil
		}
		ab.started <- tk.ID
		select {
		case <-ab.release:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	ab.d = ab.dispatcher(t, "w1", r, func(c *dispatch.Config) { c.Slots, c.ClaimAhead, c.Grace = 1, 1, 50*time.Millisecond })
	ab.stop = runFor(ab.d)
	enqueue(t, ab.bundle, "quick", 20, 0)
	require.Eventually(t, func() bool { return countStatus(t, ab.bundle, wftype.StatusCompleted) == 20 }, time.Minute, 5*time.Millisecond)
	return ab
}

// waitQueued enqueues n block tasks and waits until one runs and another
// waits for the slot (ACTIVE, claimed ahead); it returns the running one.
func (ab *aheadBundle) waitQueued(t *testing.T, n int) uuid.UUID {
	t.Helper()
	enqueue(t, ab.bundle, "block", n, 0)
	var running uuid.UUID
	select {
	case running = <-ab.started:
	case <-time.After(time.Minute):
		t.Fatal("no block task started")
	}
	require.Eventually(t, func() bool { return countStatus(t, ab.bundle, wftype.StatusActive) == 2 }, time.Minute, 5*time.Millisecond)
	require.Equal(t, 1, ab.d.Running(), "the task claimed ahead waits; it does not run")
	return running
}

// TestClaimAheadHandedBackOnShutdown: a task claimed ahead never starts once
// the dispatcher stops: it goes back to PENDING at once with no attempt
// counted, as the running one does after the grace period.
func TestClaimAheadHandedBackOnShutdown(t *testing.T) {
	t.Parallel()
	ab := setupAhead(t)
	ab.waitQueued(t, 5)
	ab.stop()
	require.Empty(t, ab.started, "the task claimed ahead never ran")
	require.Equal(t, 5, countStatus(t, ab.bundle, wftype.StatusPending))
	var attempts int
	require.NoError(t, ab.store.DB().QueryRow(ab.ctx, `SELECT coalesce(sum(attempts), -1) FROM tasks.tasks WHERE task_type = 'block'`).Scan(&attempts))
	require.Zero(t, attempts)
}

// TestClaimAheadCancelledNeverRuns: a task cancelled while it waits for a
// slot is dropped: when the slot frees, the next task runs instead.
func TestClaimAheadCancelledNeverRuns(t *testing.T) {
	t.Parallel()
	ab := setupAhead(t)
	defer ab.stop()
	running := ab.waitQueued(t, 2)
	var waiting uuid.UUID
	require.NoError(t, ab.store.DB().QueryRow(ab.ctx,
		`SELECT task_id FROM tasks.tasks WHERE task_type = 'block' AND status = 'ACTIVE' AND task_id <> $1`, running).Scan(&waiting))
	_, err := ab.store.CancelTask(ab.ctx, waiting)
	require.NoError(t, err)
	ab.bus.Publish(signalbus.TaskStatusChanged, "CANCELLED:"+waiting.String())
	close(ab.release)
	require.Eventually(t, func() bool { return countStatus(t, ab.bundle, wftype.StatusCompleted) == 21 }, time.Minute, 5*time.Millisecond)
	require.Equal(t, 1, countStatus(t, ab.bundle, wftype.StatusCancelled))
	require.Len(t, ab.started, 0, "only the first block task ran")
}

// TestNoRunStartsPastItsDeadline: waves of short runs, each wave claimed
// into idle slots, with and without claiming ahead, on a clock that steps
// back a millisecond at each reading (so every run's deadline is the
// earliest yet and wakes the deadline watcher while the next runs start);
// a handler that honours its context, as real handlers do, must never find
// it cancelled. A run
// registered as running before its deadline was set looked overdue to the
// watcher (a zero deadline is in the past) and was cancelled with "run
// timeout exceeded" before it started: TestBurnDownHTTP lost about one run
// in 20 that way.
func TestNoRunStartsPastItsDeadline(t *testing.T) {
	t.Parallel()
	const waves, wave = 30, 40
	for _, ahead := range []int{-1, 0} {
		b := setup(t)
		var cancelled atomic.Int32
		r := funcRunner{types: map[string]bool{"quick": true}, fn: func(ctx context.Context, _ *wftype.Task) (json.RawMessage, error) {
			if err := context.Cause(ctx); err != nil {
				cancelled.Add(1)
				return nil, err
			}
			return nil, nil
		}}
		d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
			c.Slots, c.Clock = wave, &backwardClock{}
			if ahead != 0 {
				c.ClaimAhead = ahead
			}
		})
		stop := runFor(d)
		for n := 1; n <= waves; n++ {
			enqueue(t, b, "quick", wave, 0)
			require.Eventually(t, func() bool {
				var open int
				require.NoError(t, b.store.DB().QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE status IN ('PENDING', 'ACTIVE')`).Scan(&open))
				return open == 0
			}, 3*time.Minute, 2*time.Millisecond)
		}
		stop()
		require.Zero(t, cancelled.Load(), "claim ahead %d: runs that found their context cancelled", ahead)
		require.Equal(t, waves*wave, countStatus(t, b, wftype.StatusCompleted), "claim ahead %d", ahead)
	}
}

// backwardClock is the real clock stepped back one millisecond more at each
// reading.
type backwardClock struct {
	clock.Real
	readings atomic.Int64
}

func (c *backwardClock) Now() time.Time {
	return c.Real.Now().Add(-time.Duration(c.readings.Add(1)) * time.Millisecond)
}
