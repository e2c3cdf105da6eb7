package workflow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/maintenance/janitor"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestEndedRunsTaskNeverRunsAgain: step b's task is ACTIVE when its run
// fails (step a fails for good). Whatever would make that task PENDING
// again, a retry outcome of its run, a snooze, its hand-back at shutdown or
// the janitor's rescue of its expired lease, ends it CANCELLED instead,
// with an error that names the run: it is never claimed again for a run
// that ended. Its step is CANCELLED, the run stays FAILED, and a retry of
// the run runs the step again with a new task.
func TestEndedRunsTaskNeverRunsAgain(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"retry", "snooze", "hand-back", "lease rescue"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := clock.NewFake(clock.Now())
			b := setup(t, clk, false)
			run := b.start(t, "pair", `{}`)
			// The steps' tasks are due by the database's clock: the test's
			// clock starts there.
			clk.Set(b.dbNow(t))
			claimed, err := b.st.ClaimTasks(ctx, store.ClaimParams{
				Owner: "w1", Total: 2, Now: clk.DBNow(),
				Slots: []store.ClaimSlot{
					{Mode: wftype.ModeAsync, TaskType: "echo", Max: 1, Lease: time.Minute},
					{Mode: wftype.ModeAsync, TaskType: "nothing", Max: 1, Lease: time.Minute},
				},
			})
			require.NoError(t, err)
			require.Len(t, claimed, 2)
			byType := map[string]wftype.Task{}
			for _, tk := range claimed {
				byType[tk.TaskType] = tk
			}
			a, bt := byType["echo"], byType["nothing"]

			bad := "bad input"
			_, err = b.st.FinishTasks(ctx, store.FinishParams{Owner: "w1", Now: clk.DBNow()},
				[]store.Finish{{ID: a.ID, Status: wftype.StatusFailed, Error: &bad, Attempt: a.Attempts}})
			require.NoError(t, err)
			s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
			require.NoError(t, err)
			require.Equal(t, wftype.RunFailed, s.Run.Status)
			got, err := b.st.GetTask(ctx, bt.ID)
			require.NoError(t, err)
			require.Equal(t, wftype.StatusActive, got.Status, "a running task is left to finish")

			oops := "connection reset"
			switch path {
			case "retry":
				_, err = b.st.FinishTasks(ctx, store.FinishParams{Owner: "w1", Now: clk.DBNow()}, []store.Finish{{
					ID: bt.ID, Status: wftype.StatusPending, Error: &oops, RetryCount: 1, Attempt: bt.Attempts}})
			case "snooze":
				_, err = b.st.FinishTasks(ctx, store.FinishParams{Owner: "w1", Now: clk.DBNow()}, []store.Finish{{
					ID: bt.ID, Status: wftype.StatusPending, Snoozed: true, RetryIn: time.Second, Attempt: bt.Attempts}})
			case "hand-back":
				_, err = b.st.ReleaseTasks(ctx, "w1", []uuid.UUID{bt.ID})
			case "lease rescue":
				clk.Advance(2 * time.Minute)
				var res janitor.Result
				res, err = janitor.New(janitor.Config{Store: b.st, Clock: clk}).RunOnce(ctx)
				require.Zero(t, res.DeadLettered)
			}
			require.NoError(t, err)

			got, err = b.st.GetTask(ctx, bt.ID)
			require.NoError(t, err)
			require.Equal(t, wftype.StatusCancelled, got.Status, "not PENDING again for a run that failed")
			require.NotNil(t, got.Error)
			require.Contains(t, *got.Error, fmt.Sprintf("workflow run %s ended FAILED", run.ID))
			require.NotNil(t, got.FinishedAt)
			clk.Advance(time.Hour)
			again, err := b.st.ClaimTasks(ctx, store.ClaimParams{
				Owner: "w2", Total: 10, Now: clk.DBNow(),
				Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "nothing", Max: 10, Lease: time.Minute}},
			})
			require.NoError(t, err)
			require.Empty(t, again, "nothing of the failed run is claimed")

			s, err = b.e.Workflows().Get(ctx, b.st, run.ID)
			require.NoError(t, err)
			require.Equal(t, wftype.RunFailed, s.Run.Status)
			require.Equal(t, wftype.StepCancelled, step(t, s, "b").Status)

			retried, err := b.e.Workflows().Retry(ctx, b.st, run.ID)
			require.NoError(t, err)
			require.Equal(t, wftype.RunRunning, retried.Status)
			s, err = b.e.Workflows().Get(ctx, b.st, run.ID)
			require.NoError(t, err)
			require.Equal(t, wftype.StepRunning, step(t, s, "b").Status, "a retry runs the step again")
			require.Len(t, b.itemTasks(t, run.ID, "b"), 2)
		})
	}
}

// dbNow is the database's clock now.
func (b *bundle) dbNow(t *testing.T) time.Time {
	t.Helper()
	var now time.Time
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT now()`).Scan(&now))
	return now
}
