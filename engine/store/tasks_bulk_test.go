package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestBulkCancelAndRequeue: a match selects by status, type, tenant and
// creation time; a dry run counts what a call would change (all of it, not
// one limit's worth); cancel and requeue change up to the limit, oldest
// first, and say when more match; nothing else moves.
func TestBulkCancelAndRequeue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var batch []store.NewTask
	for _, tt := range []string{"a", "b"} {
		for _, schema := range []string{wftype.SystemSchema, "s_one"} {
			for range 5 {
				nt := newTask(tt)
				nt.SchemaName = schema
				batch = append(batch, nt)
			}
		}
	}
	res, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	// One of a/system runs.
	claimed := claimAll(t, b, "a", 1)
	require.Len(t, claimed, 1)

	live := []wftype.TaskStatus{wftype.StatusPending, wftype.StatusActive}
	aSystem := store.TaskMatch{Statuses: live, TaskTypes: []string{"a"}, SchemaNames: []string{wftype.SystemSchema}, Limit: 3}
	n, err := b.store.CountTasks(b.ctx, aSystem)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	n, err = b.store.CountTasks(b.ctx, store.TaskMatch{Statuses: []wftype.TaskStatus{wftype.StatusPending}, SchemaNames: []string{}})
	require.NoError(t, err)
	require.Equal(t, int64(0), n, "an empty tenant list matches nothing")
	_, err = b.store.CountTasks(b.ctx, store.TaskMatch{Statuses: []wftype.TaskStatus{wftype.StatusPending, wftype.StatusFailed}})
	require.ErrorIs(t, err, wftype.ErrConflict, "cancellable and requeueable statuses do not mix")
	_, err = b.store.CancelTasks(b.ctx, store.TaskMatch{Statuses: []wftype.TaskStatus{wftype.StatusDeadLetter}})
	require.ErrorIs(t, err, wftype.ErrConflict)

	out, err := b.store.CancelTasks(b.ctx, aSystem)
	require.NoError(t, err)
	require.Equal(t, store.BulkCancel{Cancelled: 3, More: true}, out)
	out, err = b.store.CancelTasks(b.ctx, aSystem)
	require.NoError(t, err)
	require.Equal(t, store.BulkCancel{Cancelled: 2, More: false}, out)
	running, err := b.store.GetTask(b.ctx, claimed[0].ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCancelled, running.Status, "ACTIVE tasks are cancelled too")
	for _, r := range res[5:] {
		got, err := b.store.GetTask(b.ctx, r.Task.ID)
		require.NoError(t, err)
		require.Equal(t, wftype.StatusPending, got.Status, "other types and tenants are left")
	}

	// Creation time bounds: nothing created after now.
	later := clock.Now().Add(time.Hour)
	n, err = b.store.CountTasks(b.ctx, store.TaskMatch{Statuses: live, CreatedFrom: &later})
	require.NoError(t, err)
	require.Zero(t, n)

	// Requeue the cancelled ones.
	cancelled := store.TaskMatch{Statuses: []wftype.TaskStatus{wftype.StatusCancelled, wftype.StatusFailed}, TaskTypes: []string{"a"}}
	n, err = b.store.CountTasks(b.ctx, cancelled)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	rq, err := b.store.RequeueTasks(b.ctx, cancelled)
	require.NoError(t, err)
	require.Equal(t, store.BulkRequeue{Requeued: 5}, rq)
	n, err = b.store.CountTasks(b.ctx, store.TaskMatch{Statuses: []wftype.TaskStatus{wftype.StatusPending}})
	require.NoError(t, err)
	require.Equal(t, int64(20), n)
}
