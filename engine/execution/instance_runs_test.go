package execution

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// TestInstanceRunsShareTheCap: the dispatcher's claims (Reserve, Settle)
// and the synchronous runs (Acquire) take room from one count under a
// pair's concurrency.per_instance. A synchronous run is refused only by
// runs; a claim in flight makes it wait, and the claims that follow leave
// it the room it waits for; a claim the cap left short is told when a run
// ends.
func TestInstanceRunsShareTheCap(t *testing.T) {
	t.Parallel()
	pair := runners.Pair{Mode: wftype.ModeSync, TaskType: "one"}
	ctx := t.Context()

	t.Run("runs refuse, a claim's settled room is taken", func(t *testing.T) {
		t.Parallel()
		c := NewInstanceRuns()
		require.Equal(t, 1, c.Reserve(pair, 1, 5, nil), "the claim gets the cap's room, not what it asked for")
		c.Settle(pair, 1, 1) // its task runs
		ok, err := c.Acquire(ctx, pair, 1)
		require.NoError(t, err)
		require.False(t, ok, "the dispatcher's run holds the one slot")
		c.Release(pair, 1)
		ok, err = c.Acquire(ctx, pair, 1)
		require.NoError(t, err)
		require.True(t, ok, "the run ended")
		require.Equal(t, 0, c.Reserve(pair, 1, 5, nil), "the synchronous run holds the one slot")
	})

	t.Run("a claim in flight makes a synchronous run wait, not fail", func(t *testing.T) {
		t.Parallel()
		c := NewInstanceRuns()
		require.Equal(t, 1, c.Reserve(pair, 1, 5, nil))
		got := make(chan error, 1)
		go func() {
			ok, err := c.Acquire(ctx, pair, 1)
			if err == nil && !ok {
				err = errors.New("refused")
			}
			got <- err
		}()
		waitFor(t, func() bool { return c.count(pair).waiting == 1 })
		c.Settle(pair, 1, 0) // the claim found nothing
		require.Equal(t, 0, c.Reserve(pair, 1, 5, nil), "the next claim leaves the waiting run its room")
		require.NoError(t, <-got, "room once the claim settled")
	})

	t.Run("a waiting synchronous run ends with its context", func(t *testing.T) {
		t.Parallel()
		c := NewInstanceRuns()
		require.Equal(t, 1, c.Reserve(pair, 1, 1, nil))
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		ok, err := c.Acquire(cctx, pair, 1)
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, ok)
		require.Zero(t, c.count(pair).waiting)
	})

	t.Run("a claim that left a waiting run its room is told when the run gives up", func(t *testing.T) {
		t.Parallel()
		c := NewInstanceRuns()
		require.Equal(t, 1, c.Reserve(pair, 1, 1, nil)) // a claim in flight
		cctx, cancel := context.WithCancel(ctx)
		got := make(chan error, 1)
		go func() {
			_, err := c.Acquire(cctx, pair, 1)
			got <- err
		}()
		waitFor(t, func() bool { return c.count(pair).waiting == 1 })
		var woken atomic.Int32
		require.Equal(t, 0, c.Reserve(pair, 1, 1, func() { woken.Add(1) }), "the room is the waiting run's")
		cancel() // its caller went away
		require.ErrorIs(t, <-got, context.Canceled)
		require.EqualValues(t, 1, woken.Load(), "the room it leaves is free: the short claim's dispatcher is woken")
	})

	t.Run("a short claim is told when a run ends", func(t *testing.T) {
		t.Parallel()
		c := NewInstanceRuns()
		ok, err := c.Acquire(ctx, pair, 2)
		require.NoError(t, err)
		require.True(t, ok)
		woken := 0
		require.Equal(t, 1, c.Reserve(pair, 2, 3, func() { woken++ }))
		c.Settle(pair, 1, 1)
		require.Zero(t, woken)
		c.Release(pair, 1) // the synchronous run ends
		require.Equal(t, 1, woken)
		c.Release(pair, 1) // the dispatcher's: nobody asked again
		require.Equal(t, 1, woken)
	})
}

// count returns a copy of pair's count.
func (c *InstanceRuns) count(pair runners.Pair) pairRuns {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.pair(pair)
}

// waitFor waits, generously, until cond holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, time.Millisecond)
}
