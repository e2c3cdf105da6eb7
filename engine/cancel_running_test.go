package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestCancelRunningNewestWins: a task whose type says on_duplicate:
// cancel_running, enqueued while a task of its key runs, stops that run
// (its context is cancelled), which ends CANCELLED, and runs in its place.
func TestCancelRunningNewestWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	r := &blockingRunner{started: make(chan uuid.UUID, 2), ended: make(chan error, 2)}
	startEngine(t, pool, "w1", r, func(c *engine.Config) { c.Slots = 4 })

	enqueue := func() store.InsertResult {
		res, err := st.InsertTasks(ctx, []store.NewTask{{SchemaName: "system", Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync,
			TaskType: "count", MaxRetries: 3, DedupKey: "sync:acct-1", OnDuplicate: store.CancelRunning}})
		require.NoError(t, err)
		return res[0]
	}
	receive := func(ch <-chan uuid.UUID) uuid.UUID {
		select {
		case id := <-ch:
			return id
		case <-time.After(30 * time.Second):
			t.Fatal("no task started")
		}
		return uuid.Nil
	}
	first := enqueue()
	require.Equal(t, first.Task.ID, receive(r.started))

	second := enqueue()
	require.False(t, second.Duplicate)
	require.Equal(t, first.Task.ID, *second.Replaced)
	select {
	case cause := <-r.ended:
		require.Error(t, cause)
	case <-time.After(30 * time.Second):
		t.Fatal("the replaced run was not stopped")
	}
	require.Equal(t, second.Task.ID, receive(r.started))
	got, err := st.GetTask(ctx, first.Task.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCancelled, got.Status)
	_, err = st.CancelTask(ctx, second.Task.ID)
	require.NoError(t, err)
}
