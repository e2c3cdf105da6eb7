package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/wftype"
)

// undeclaredMessage is the start of the error of a run that no live
// instance can advance.
const undeclaredMessage = "workflow stuck is declared by no running instance's specs"

// TestUndeclaredWorkflowRunFails: a run whose workflow was removed from
// the specs of every running instance waited for its deadline, its step
// ends recorded for a step pass that no instance would run. Now the pass
// of undeclared workflows fails it, and cancels its PENDING tasks, once no
// instance declares the workflow: not while an instance's statement holds,
// nor while the caller's own specs declare it, nor while a wf instance is
// connected that stated nothing (an earlier version: its workflows are
// unknown).
func TestUndeclaredWorkflowRunFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil, false)
	run := b.start(t, "stuck", `{}`)
	task := b.onlyTask(t, run.ID)
	other := otherEngine(t, b, otherWorkflowSpecs).Workflows() // declares "other", not "stuck"
	pass := func(w *workflow.Workflows) int {
		t.Helper()
		n, err := w.FailUndeclared(ctx, b.st, 100)
		require.NoError(t, err)
		return n
	}
	running := func() {
		t.Helper()
		r, err := b.st.GetWorkflowRun(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, wftype.RunRunning, r.Status, "%v", r.Error)
	}

	require.Zero(t, pass(b.e.Workflows()), "the caller's own specs declare it")
	require.NoError(t, b.st.DeclareWorkflows(ctx, "a", "wf", []string{"other", "stuck"}, time.Hour, nil))
	require.Zero(t, pass(other), "instance a declares it")
	running()

	// An instance of an earlier wf, connected, stated nothing.
	cc := b.pool.Config().ConnConfig.Copy()
	cc.RuntimeParams["application_name"] = "wf-leader:wf:old-instance"
	old, err := pgx.ConnectConfig(ctx, cc)
	require.NoError(t, err)
	// Instance a's statement runs out.
	require.NoError(t, b.st.DeclareWorkflows(ctx, "a", "wf", []string{"other", "stuck"}, 0, nil))
	require.Zero(t, pass(other), "an instance that stated nothing may declare it")
	running()
	require.NoError(t, old.Close(ctx))
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx,
			`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wf-leader:wf:old-instance' AND datname = current_database()`).Scan(&n))
		return n == 0
	}, 90*time.Second, 20*time.Millisecond, "the old instance's session never ended")

	require.Equal(t, 1, pass(other))
	s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status)
	require.Contains(t, *s.Run.Error, undeclaredMessage)
	require.Equal(t, 1, events(t, b.pool, workflow.EventFailed, run.ID))
	tk, err := b.st.GetTask(ctx, task)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCancelled, tk.Status, "its PENDING task never runs")
	require.Zero(t, pass(other), "once")
	var statements int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM tasks.instance_workflows`).Scan(&statements))
	require.Zero(t, statements, "the statement that ran out is deleted")
}

// TestUndeclaredWorkflowRunFailsWhileEnginesRun: `wf run` engines state
// the workflows they declare as they start, and their leader's pass fails
// the runs of the others. A run of stuck, started by an instance that no
// longer runs (and whose statement ran out), fails within a pass of an
// engine that does not declare stuck, while a run of a workflow a running
// engine declares goes on.
func TestUndeclaredWorkflowRunFailsWhileEnginesRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil, false)
	stuck := b.start(t, "stuck", `{}`)
	other := otherEngine(t, b, otherWorkflowSpecs, func(c *engine.Config) { c.JanitorInterval = 100 * time.Millisecond })
	kept, err := other.Workflows().Start(ctx, b.st, workflow.StartRequest{Workflow: "other"})
	require.NoError(t, err)
	runEngine(t, other)

	s := b.wait(t, stuck.ID, wftype.RunFailed)
	require.Contains(t, *s.Run.Error, undeclaredMessage)
	b.wait(t, kept.ID, wftype.RunCompleted)
}
