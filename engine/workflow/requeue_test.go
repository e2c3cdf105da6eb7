package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wftype"
)

// TestRequeueRefusesStepTasks: a requeue by hand (RequeueTask, behind the
// admin route, `wf tasks requeue` and the bulk dead-letter requeue) of a
// workflow step's task is refused, so the task never runs again for a run
// that ended, nor counts, after a retry of its run, for the new attempt's
// step while that attempt's own task runs. A step runs again through a retry
// of its run.
func TestRequeueRefusesStepTasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a task of a cancelled run", func(t *testing.T) {
		b, clk, run, id := setupStuck(t)
		_, err := b.e.Workflows().Cancel(ctx, b.st, run.ID)
		require.NoError(t, err)
		_, err = b.st.RequeueTask(ctx, id)
		require.ErrorIs(t, err, wftype.ErrConflict)
		require.ErrorContains(t, err, "retry the run instead")
		task, err := b.st.GetTask(ctx, id)
		require.NoError(t, err)
		require.Equal(t, wftype.StatusCancelled, task.Status, "the refused requeue changed nothing")
		require.Empty(t, b.claimBlocks(t, clk, 2, time.Hour), "a task of the cancelled run was claimed again")
	})

	t.Run("the last attempt's task after a retry", func(t *testing.T) {
		b, clk, run, old := setupStuck(t)
		_, err := b.e.Workflows().Cancel(ctx, b.st, run.ID)
		require.NoError(t, err)
		_, err = b.e.Workflows().Retry(ctx, b.st, run.ID)
		require.NoError(t, err)
		_, err = b.st.RequeueTask(ctx, old)
		require.ErrorIs(t, err, wftype.ErrConflict)
		claimed := b.claimBlocks(t, clk, 2, time.Hour)
		require.Len(t, claimed, 1, "only the new attempt's task")
		require.NotEqual(t, old, claimed[0].ID)
	})
}
