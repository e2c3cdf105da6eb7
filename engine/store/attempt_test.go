package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestStaleAttemptChangesNothing: an instance's heartbeat and outcome are
// of one claim (owner and attempt). When the task's lease ran out and the
// same instance claimed it again, a heartbeat or an outcome of the earlier
// claim, delayed past its lease, extends nothing and overwrites nothing;
// the newer claim's go through.
func TestStaleAttemptChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.insertOne(t, "x")
	first := claimAll(t, b, "x", 1)
	require.Len(t, first, 1)
	require.Equal(t, 1, first[0].Attempts)

	// The lease runs out; the janitor hands the task back (as its rescue
	// does), and the same instance claims it again: attempt 2.
	_, err := b.pool.Exec(b.ctx, `UPDATE tasks.tasks SET status = 'PENDING', owner_id = NULL, locked_until = NULL, run_after = now() WHERE task_id = $1`, id)
	require.NoError(t, err)
	second := claimAll(t, b, "x", 1)
	require.Len(t, second, 1)
	require.Equal(t, 2, second[0].Attempts)
	before, err := b.store.GetTask(b.ctx, id)
	require.NoError(t, err)

	// The first claim's heartbeat: not held, nothing extended.
	held, err := b.store.Heartbeat(b.ctx, "w1", []store.Lease{{ID: id, Lease: time.Hour, Attempt: 1}}, nil)
	require.NoError(t, err)
	require.Empty(t, held)
	// The first claim's outcome, delayed: nothing written.
	msg := "late failure of attempt 1"
	done, err := b.store.FinishTasks(b.ctx, store.FinishParams{Owner: "w1"},
		[]store.Finish{{ID: id, Status: wftype.StatusFailed, Error: &msg, Attempt: 1}})
	require.NoError(t, err)
	require.Empty(t, done)
	after, err := b.store.GetTask(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusActive, after.Status)
	require.Equal(t, before.LockedUntil, after.LockedUntil, "the stale heartbeat extended nothing")
	require.Nil(t, after.Error)

	// The current claim's heartbeat and outcome go through.
	held, err = b.store.Heartbeat(b.ctx, "w1", []store.Lease{{ID: id, Lease: time.Hour, Attempt: 2}}, nil)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{id}, held)
	done, err = b.store.FinishTasks(b.ctx, store.FinishParams{Owner: "w1"},
		[]store.Finish{{ID: id, Status: wftype.StatusCompleted, Attempt: 2}})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{id}, done)
	final, err := b.store.GetTask(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCompleted, final.Status)
}
