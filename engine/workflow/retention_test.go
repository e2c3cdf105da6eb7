package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestRetentionKeepsWhatARunReads: task retention (here 30 minutes) is
// shorter than a workflow's timeout (30 days), and maintenance runs at the
// start of the next month, so the month the run's step tasks were created
// in is a past one. The tasks that completed are removed with it, row by
// row (a task still running keeps the partition: "trimmed") or with the
// whole partition ("dropped"). What the run still has to read of them is
// not lost: a for_each step whose last item ends after retention gathers
// every item's output, and a step end recorded for the step pass (the task
// ended where the workflow is not declared) is applied by the pass.
func TestRetentionKeepsWhatARunReads(t *testing.T) {
	t.Parallel()
	items := `[{"from":"item 0"},{"from":"item 1"},{"from":"item 2"}]`
	for _, tc := range []struct {
		name, workflow string
		// remoteLast: the last task ends on a store without the step hook,
		// so its end waits for the step pass.
		remoteLast bool
		// tasks: the step's tasks; ended: how many end before retention
		// (the rest run on, and end after it).
		tasks, ended int
		step, after  string
		// outputs: the step's; next: the inputs of the step after it.
		outputs, next string
	}{
		{name: "items trimmed", workflow: "gather", tasks: 3, ended: 2, step: "each", after: "join",
			outputs: items, next: `{"outs":` + items + `}`},
		{name: "items dropped, last end pending", workflow: "gather", tasks: 3, ended: 3, remoteLast: true, step: "each", after: "join",
			outputs: items, next: `{"outs":` + items + `}`},
		{name: "step end pending", workflow: "relay", tasks: 1, ended: 1, remoteLast: true, step: "first", after: "second",
			outputs: `{"from":"item 0"}`, next: `{"from":"item 0"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := clock.NewFake(clock.Now())
			b := setup(t, clk, false)
			run := b.start(t, tc.workflow, `{}`)
			clk.Set(b.dbNow(t)) // the tasks are due by the database's clock
			claimed, err := b.st.ClaimTasks(ctx, store.ClaimParams{
				Owner: "w1", Total: 10, Now: clk.DBNow(),
				Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "remote", Max: 10, Lease: time.Hour}},
			})
			require.NoError(t, err)
			byItem := map[int]wftype.Task{}
			for _, task := range claimed {
				var in struct{ I int }
				require.NoError(t, json.Unmarshal(task.Inputs, &in))
				byItem[in.I] = task
			}
			require.Len(t, byItem, tc.tasks)
			finish := func(st *store.Store, i int) {
				t.Helper()
				task := byItem[i]
				_, err := st.FinishTasks(ctx, store.FinishParams{Owner: "w1", Now: clk.DBNow()}, []store.Finish{{
					ID: task.ID, Status: wftype.StatusCompleted, Attempt: task.Attempts,
					Outputs: json.RawMessage(fmt.Sprintf(`{"from":"item %d"}`, i)),
				}})
				require.NoError(t, err)
			}
			last := tc.tasks - 1
			for i := range tc.ended {
				if i == last && tc.remoteLast {
					finish(store.New(b.pool), i) // no step hook: the end is recorded for a pass
				} else {
					finish(b.st, i)
				}
			}

			// Maintenance at the start of the next month: the tasks' month is
			// past, and every completed task is past its window.
			created := store.IDTime(byItem[0].ID)
			at := time.Date(created.Year(), created.Month()+1, 1, 1, 0, 0, 0, time.UTC)
			sup, err := maintenance.New(maintenance.Config{
				Store: b.st, Clock: clk, Retention: maintenance.Retention{Completed: 30 * time.Minute},
				Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			require.NoError(t, err)
			res, err := sup.RunOnce(ctx, at)
			require.NoError(t, err)
			var left int
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM tasks.tasks WHERE workflow_run_id = $1 AND status = 'COMPLETED'`,
				run.ID).Scan(&left))
			require.Zero(t, left, "retention removed the completed step tasks (%+v)", res)
			if tc.ended == tc.tasks {
				require.NotEmpty(t, res.Dropped, "nothing kept the partition")
			}
			// Task ids carry the wall clock, so the tasks the run creates next
			// land in this month again: make its partitions again (in
			// production they land in the month of their creation).
			_, err = b.st.EnsurePartitions(ctx, clock.Now(), 1)
			require.NoError(t, err)

			if tc.ended < tc.tasks {
				finish(b.st, last)
			} else {
				n, err := b.e.Workflows().Sweep(ctx, b.st, 500)
				require.NoError(t, err)
				require.Equal(t, 1, n, "the step pass applied the recorded end")
			}
			s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
			require.NoError(t, err)
			require.Equal(t, wftype.RunRunning, s.Run.Status, "%v", s.Run.Error)
			require.Equal(t, wftype.StepCompleted, step(t, s, tc.step).Status)
			require.JSONEq(t, tc.outputs, string(step(t, s, tc.step).Outputs))
			require.Equal(t, wftype.StepRunning, step(t, s, tc.after).Status)
			var inputs json.RawMessage
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT inputs FROM tasks.tasks WHERE workflow_run_id = $1 AND workflow_step = $2`,
				run.ID, tc.after).Scan(&inputs))
			require.JSONEq(t, tc.next, string(inputs), "the next step sees every output")
		})
	}
}
