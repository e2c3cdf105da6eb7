package workflow_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// growSpecs declare workflow grow with step a; withStepB adds step b after
// it, as a deploy of new specs does while runs of grow are under way.
const (
	growSpecs = `
kind: TaskType
name: nothing
handler: {builtin: nothing}
---
kind: Workflow
name: grow
steps:
  a: {task_type: nothing}
`
	withStepB = growSpecs + `  b: {task_type: nothing, depends_on: [a]}
`
)

// TestStepAddedWhileARunIsUnderWay: a run of grow starts under specs that
// declare step a only; the specs that end a's task declare step b after
// it. b runs once, its end is recorded, and the run completes: b's task is
// not created again at every later change of the run (its step had no row
// to save its state in), and the run does not wait for its deadline.
func TestStepAddedWhileARunIsUnderWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	clk := clock.NewFake(clock.Now())
	build := func(specs string) *engine.Engine {
		set, err := spec.Compile([]spec.Source{{Name: "grow.yaml", Data: []byte(specs)}}, spec.Options{Builtins: []string{"nothing"}})
		require.NoError(t, err)
		reg := builtin.NewRegistry()
		require.NoError(t, reg.Register("nothing", func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
			return nil, nil
		}))
		e, err := engine.New(engine.Config{
			Name: "wf-" + uuid.NewString()[:8], Pool: pool, Specs: set, Registry: reg, Clock: clk,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		require.NoError(t, err)
		return e
	}
	before, after := build(growSpecs), build(withStepB)
	run, err := before.Workflows().Start(ctx, before.Store(), workflow.StartRequest{Workflow: "grow"})
	require.NoError(t, err)

	st := after.Store() // its step hook declares b
	finishAll := func(step string) {
		t.Helper()
		var now time.Time
		require.NoError(t, pool.QueryRow(ctx, `SELECT now()`).Scan(&now))
		clk.Set(now) // the tasks are due by the database's clock
		claimed, err := st.ClaimTasks(ctx, store.ClaimParams{
			Owner: "w", Total: 10, Now: clk.DBNow(),
			Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "nothing", Max: 10, Lease: time.Minute}},
		})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "step %s's one task", step)
		_, err = st.FinishTasks(ctx, store.FinishParams{Owner: "w", Now: clk.DBNow()}, []store.Finish{{
			ID: claimed[0].ID, Status: wftype.StatusCompleted, Attempt: claimed[0].Attempts}})
		require.NoError(t, err)
	}
	finishAll("a")
	finishAll("b")

	s, err := after.Workflows().Get(ctx, st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunCompleted, s.Run.Status, "%v", s.Run.Error)
	require.Len(t, s.Steps, 2)
	require.Equal(t, wftype.StepCompleted, step(t, s, "b").Status)
	var tasks int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM tasks.tasks WHERE workflow_run_id = $1 AND workflow_step = 'b'`,
		run.ID).Scan(&tasks))
	require.Equal(t, 1, tasks, "b ran once")
}
