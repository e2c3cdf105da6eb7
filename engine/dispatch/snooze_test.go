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
