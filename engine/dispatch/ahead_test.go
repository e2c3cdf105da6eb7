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
