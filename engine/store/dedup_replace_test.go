package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// replacingTask is a noop task under key that replaces its live holder as
// on says.
func replacingTask(key string, on store.OnDuplicate) store.NewTask {
	nt := keyedTask(key, time.Time{})
	nt.OnDuplicate = on
	return nt
}

// statuses returns the statuses of the tasks under key, oldest first.
func statuses(t *testing.T, b *bundle, key string) []wftype.TaskStatus {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT status FROM tasks.tasks WHERE dedup_key = $1 ORDER BY "timestamp", task_id`, key)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[wftype.TaskStatus])
	require.NoError(t, err)
	return out
}

// TestReplaceQueued: a new task replaces the PENDING holder of its key,
// which ends CANCELLED; a running holder is kept and the new task is its
// duplicate; the default keeps the holder.
func TestReplaceQueued(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.insertPeriod(t, replacingTask("q", store.ReplaceQueued))
	second := b.insertPeriod(t, replacingTask("q", store.ReplaceQueued))
	require.False(t, second.Duplicate)
	require.NotNil(t, second.Replaced)
	require.Equal(t, first.Task.ID, *second.Replaced)
	require.Equal(t, []wftype.TaskStatus{wftype.StatusCancelled, wftype.StatusPending}, statuses(t, b, "q"))

	kept := b.insertPeriod(t, replacingTask("q", store.KeepExisting))
	require.True(t, kept.Duplicate)
	require.Equal(t, second.Task.ID, kept.Task.ID)

	require.Len(t, claimAll(t, b, "noop", 10), 1) // second is ACTIVE now
	third := b.insertPeriod(t, replacingTask("q", store.ReplaceQueued))
	require.True(t, third.Duplicate, "a running holder is not replaced")
	require.Equal(t, second.Task.ID, third.Task.ID)
	require.Nil(t, third.Replaced)
	require.Equal(t, []wftype.TaskStatus{wftype.StatusCancelled, wftype.StatusActive}, statuses(t, b, "q"))
}

// TestCancelRunning: a new task cancels the running holder of its key,
// whose instance is told at once (CANCELLED:<id> on the status channel),
// and takes its place.
func TestCancelRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.insertPeriod(t, replacingTask("r", store.CancelRunning))
	require.Len(t, claimAll(t, b, "noop", 10), 1)

	conn, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(b.ctx, `LISTEN task_status_changed`)
	require.NoError(t, err)

	second := b.insertPeriod(t, replacingTask("r", store.CancelRunning))
	require.False(t, second.Duplicate)
	require.Equal(t, first.Task.ID, *second.Replaced)
	require.Equal(t, []wftype.TaskStatus{wftype.StatusCancelled, wftype.StatusPending}, statuses(t, b, "r"))
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	n, err := conn.Conn().WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, "CANCELLED:"+first.Task.ID.String(), n.Payload)
	got, err := b.store.GetTask(b.ctx, first.Task.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCancelled, got.Status)
}

// TestReplaceRace: 50 clients enqueue one key at once, newest wins: every
// enqueue succeeds, one task of the key is live at the end, and every other
// one was cancelled (or never created, answered as a duplicate).
func TestReplaceRace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, on := range []store.OnDuplicate{store.ReplaceQueued, store.CancelRunning} {
		key := fmt.Sprintf("race-%s", on)
		var wg sync.WaitGroup
		errs := make([]error, 50)
		for c := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[c] = store.InsertSettled(b.ctx, []store.NewTask{replacingTask(key, on)}, b.store.InsertTasks,
					func(r store.InsertResult) bool { return r.Released }, func(store.NewTask) string { return key })
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		live := 0
		for _, st := range statuses(t, b, key) {
			switch st {
			case wftype.StatusPending, wftype.StatusActive:
				live++
			default:
				require.Equal(t, wftype.StatusCancelled, st)
			}
		}
		require.Equal(t, 1, live, "%s: one live task of the key", on)
	}
}
