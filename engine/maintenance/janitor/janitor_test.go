package janitor_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/maintenance/janitor"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestRescueUsesDatabaseClock: on a host whose clock is an hour behind the
// database's, the janitor still rescues a task whose lease expired by the
// database's clock, and its retry is due after the backoff by that clock.
func TestRescueUsesDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := dbtest.NewStore(t)
	res, err := st.InsertTasks(ctx, []store.NewTask{{SchemaName: "system", Scope: wftype.ScopeSystem,
		ExecutionMode: wftype.ModeAsync, TaskType: "job", MaxRetries: 3, Inputs: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	id := res[0].Task.ID
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Owner: "dead", Total: 1,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "job", Max: 1, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	_, err = st.DB().Exec(ctx, `UPDATE tasks.tasks SET locked_until = now() - interval '1 second' WHERE task_id = $1`, id)
	require.NoError(t, err)

	j := janitor.New(janitor.Config{Store: st, Clock: clock.Skewed{Offset: -time.Hour},
		Backoff: func(string) func(int) time.Duration { return func(int) time.Duration { return 10 * time.Second } }})
	got, err := j.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, got.Requeued)
	tk, err := st.GetTask(ctx, id)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusPending, tk.Status)
	require.Equal(t, 1, tk.RetryCount)
	var wait float64
	require.NoError(t, st.DB().QueryRow(ctx,
		`SELECT extract(epoch FROM run_after - now()) FROM tasks.tasks WHERE task_id = $1`, id).Scan(&wait))
	require.InDelta(t, 10, wait, 3, "retry due in %.0fs by the database's clock", wait)
}

// TestRescueGoesOnPastATaskHeldByAnother: a batch that finds an expired task
// another transaction holds skips it (SKIP LOCKED) and the pass goes on
// draining the rest, batch after batch, rather than stopping at the short
// batch and leaving them for a whole interval; the held task stays as it
// was.
func TestRescueGoesOnPastATaskHeldByAnother(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := dbtest.NewStore(t)
	const n = 5
	batch := make([]store.NewTask, n)
	for i := range batch {
		batch[i] = store.NewTask{SchemaName: "system", Scope: wftype.ScopeSystem,
			ExecutionMode: wftype.ModeAsync, TaskType: "job", MaxRetries: 3, Inputs: json.RawMessage(`{}`)}
	}
	_, err := st.InsertTasks(ctx, batch)
	require.NoError(t, err)
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Owner: "dead", Total: n,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "job", Max: n, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	// Every lease ended, the held task's first (the janitor takes the
	// oldest leases first, so every batch finds it).
	held := claimed[0].ID
	_, err = st.DB().Exec(ctx, `
UPDATE tasks.tasks SET locked_until = now() - CASE WHEN task_id = $1 THEN interval '1 hour' ELSE interval '1 minute' END
WHERE status = 'ACTIVE'`, held)
	require.NoError(t, err)
	tx, err := st.DB().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `SELECT 1 FROM tasks.tasks WHERE task_id = $1 FOR UPDATE`, held)
	require.NoError(t, err)

	j := janitor.New(janitor.Config{Store: st, BatchSize: 2})
	got, err := j.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, janitor.Result{Requeued: n - 1}, got, "one pass rescues every task but the held one")
	var active []string
	require.NoError(t, st.DB().QueryRow(ctx,
		`SELECT array_agg(task_id::text) FROM tasks.tasks WHERE status = 'ACTIVE'`).Scan(&active))
	require.Equal(t, []string{held.String()}, active)
}
