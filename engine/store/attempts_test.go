package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// claimOne claims the one due noop task for owner.
func (b *bundle) claimOne(t *testing.T, owner string) wftype.Task {
	t.Helper()
	later := clock.Now().Add(time.Hour)
	got, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: owner, Total: 1, Now: &later,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 1, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

// finishOne writes one outcome as owner ("": whoever holds the task).
func (b *bundle) finishOne(t *testing.T, owner string, f store.Finish) {
	t.Helper()
	_, err := b.store.FinishTasks(b.ctx, store.FinishParams{Owner: owner}, []store.Finish{f})
	require.NoError(t, err)
}

func TestAttemptHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.insertOne(t, "noop")

	none, err := b.store.GetAttempts(b.ctx, id)
	require.NoError(t, err)
	require.Empty(t, none)

	// A retry on one instance, then success on another.
	first := b.claimOne(t, "host-a")
	boom := "boom"
	b.finishOne(t, "host-a", store.Finish{ID: id, Status: wftype.StatusPending, Error: &boom, RetryCount: 1})
	b.claimOne(t, "host-b")
	b.finishOne(t, "host-b", store.Finish{ID: id, Status: wftype.StatusCompleted, RetryCount: 1})

	got, err := b.store.GetAttempts(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, 1, got[0].Attempt)
	require.Equal(t, "host-a", *got[0].OwnerID)
	require.Equal(t, wftype.StatusPending, got[0].Outcome)
	require.Equal(t, "boom", *got[0].Error)
	require.NotNil(t, got[0].StartedAt)
	require.WithinDuration(t, *first.StartedAt, *got[0].StartedAt, time.Millisecond)
	require.False(t, got[0].FinishedAt.IsZero())
	require.Equal(t, 2, got[1].Attempt)
	require.Equal(t, "host-b", *got[1].OwnerID)
	require.Equal(t, wftype.StatusCompleted, got[1].Outcome)
	require.Nil(t, got[1].Error)

	// An outcome that does not apply (the task is no longer ACTIVE) adds
	// nothing.
	b.finishOne(t, "host-b", store.Finish{ID: id, Status: wftype.StatusFailed})
	got, err = b.store.GetAttempts(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, got, 2)

	missing, _, err := store.NewID()
	require.NoError(t, err)
	_, err = b.store.GetAttempts(b.ctx, missing)
	require.ErrorIs(t, err, wftype.ErrNotFound)
}

func TestAttemptHistoryKeepsTheLast20AndCancellations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.insertOne(t, "noop")
	for i := range 25 {
		b.claimOne(t, fmt.Sprintf("host-%d", i))
		msg := fmt.Sprintf("failure %d", i+1)
		b.finishOne(t, "", store.Finish{ID: id, Status: wftype.StatusPending, Error: &msg})
	}
	got, err := b.store.GetAttempts(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, got, 20)
	require.Equal(t, 6, got[0].Attempt)
	require.Equal(t, "failure 6", *got[0].Error)
	require.Equal(t, 25, got[19].Attempt)

	// Cancelling the running attempt ends it in the history; cancelling a
	// PENDING task adds no attempt.
	b.claimOne(t, "host-x")
	_, err = b.store.CancelTask(b.ctx, id)
	require.NoError(t, err)
	got, err = b.store.GetAttempts(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, got, 20)
	require.Equal(t, 26, got[19].Attempt)
	require.Equal(t, wftype.StatusCancelled, got[19].Outcome)
	require.Equal(t, "host-x", *got[19].OwnerID)

	other := b.insertOne(t, "other")
	_, err = b.store.CancelTask(b.ctx, other)
	require.NoError(t, err)
	got, err = b.store.GetAttempts(b.ctx, other)
	require.NoError(t, err)
	require.Empty(t, got)
}
