package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/worker"
	"github.com/wfhq/wf/wftype"
)

// TestStepRunByWfExecAdvancesItsRun: the first step's task of a relay run
// is run as `wf exec --task-id` runs it, by a worker over the engine of
// specs that declare the remote task type and no workflow (so its store
// has no step hook: the end is recorded for a step pass). The run is not
// stuck: the workflow's engine, once it runs, advances it from that end,
// and the second step sees the worker's outputs.
func TestStepRunByWfExecAdvancesItsRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil, false)
	run := b.start(t, "relay", `{}`)
	require.NoError(t, b.st.DeclareWorkflows(ctx, b.e.Owner(), "wf", b.e.Workflows().Names(), time.Hour, nil))

	exec := otherEngine(t, b, remoteOnlySpecs)
	w, err := worker.New(worker.Config{
		Store: exec.Store(), Owner: exec.Owner(), Capabilities: exec.Capabilities(), Rules: exec.Rules(), CheckPauses: true,
	})
	require.NoError(t, err)
	claim, err := w.Take(ctx, b.onlyTask(t, run.ID), store.WorkerLease{}) // PENDING: the worker claims it itself
	require.NoError(t, err)
	res, err := w.Run(ctx, claim)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCompleted, res.Status)

	s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StepRunning, step(t, s, "first").Status, "nothing advanced the run where the workflow is not declared")

	runEngine(t, b.e)
	s = b.wait(t, run.ID, wftype.RunCompleted)
	require.JSONEq(t, `{"got":{"from":"elsewhere"}}`, string(step(t, s, "second").Outputs))
}
