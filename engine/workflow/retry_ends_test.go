package workflow_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestRetryTakesTheLastAttemptsRecordedEnds: a step task cancelled where no
// step hook runs (a store without one: wf tasks cancel on a machine whose
// specs lack the workflow) leaves its end for a step pass. A retry of the
// run before that pass takes the end with it, so that the pass never applies
// the last attempt's cancel to the new attempt, which it then failed (the
// walk-through of docs/workflows.md, a cancel and a retry from the CLI,
// met it about one time in four).
func TestRetryTakesTheLastAttemptsRecordedEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil, false) // no engine running: no step pass but the test's
	run := b.start(t, "stuck", `{}`)
	first := b.onlyTask(t, run.ID)
	_, err := store.New(b.pool).CancelTask(ctx, first)
	require.NoError(t, err)
	_, recorded := b.liveTasks(t, run.ID)
	require.Equal(t, 1, recorded, "the cancel's end waits for a step pass")
	_, err = b.e.Workflows().Cancel(ctx, b.st, run.ID)
	require.NoError(t, err)

	retried, err := b.e.Workflows().Retry(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunRunning, retried.Status)
	live, recorded := b.liveTasks(t, run.ID)
	require.Equal(t, 1, live, "the new attempt's task")
	require.Zero(t, recorded, "the retry took the last attempt's end")

	n, err := b.e.Workflows().Sweep(ctx, b.st, 100)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left for the step pass")
	s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunRunning, s.Run.Status, "the new attempt runs on")
	require.Equal(t, 2, s.Run.Attempt)
	require.Equal(t, wftype.StepRunning, step(t, s, "wait").Status)
}
