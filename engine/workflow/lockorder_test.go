package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestLeasedFinishAndCancelDoNotDeadlock: execution.FinishLeased (the
// remote worker's complete/fail, engine/worker) locks the step task
// (LockActiveTask) and only then, inside FinishTasks, the task's run; a
// cancel by hand locks the run, then the task. Interleaved, PostgreSQL
// aborts one of them.
func TestLeasedFinishAndCancelDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, _, id := setupStuck(t)
	claimed, err := b.st.ClaimTasks(ctx, store.ClaimParams{Owner: "w", Total: 1, Now: clk.DBNow(),
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "block", Max: 1, Lease: time.Hour}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	locked := make(chan struct{})
	proceed := make(chan struct{})
	finished, finishErr := inBackground(func() error {
		// FinishLeased's body, with a pause after the task's lock.
		return b.st.InTx(ctx, func(tx *store.Store) error {
			if _, err := tx.LockActiveTask(ctx, id, store.WorkerLease{Owner: "w", Attempt: claimed[0].Attempts}); err != nil {
				return err
			}
			close(locked)
			<-proceed
			_, err := tx.FinishTasks(ctx, store.FinishParams{Owner: "w", Now: clk.DBNow()},
				[]store.Finish{{ID: id, Status: wftype.StatusCompleted, Attempt: claimed[0].Attempts}})
			return err
		})
	})
	<-locked
	cancelled, cancelErr := b.cancelInBackground(ctx, id)
	b.waitLockWaiters(t, 1, cancelled, "the cancel by hand")
	close(proceed)
	awaitEnded(t, "the completion or the cancel", finished, cancelled)
	t.Logf("completion: %v; cancel: %v", *finishErr, *cancelErr)
	require.NoError(t, *finishErr, "the completion")
	if *cancelErr != nil {
		require.ErrorIs(t, *cancelErr, wftype.ErrConflict, "the cancel may only find the task ended")
	}
}

// TestJanitorRescueAndCancelDoNotDeadlock: the janitor's rescue locks the
// expired tasks (ExpiredLeases) and only then, inside FinishTasks, their
// runs; a cancel by hand locks the run, then the task.
func TestJanitorRescueAndCancelDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, _, id := setupStuck(t)
	claimed, err := b.st.ClaimTasks(ctx, store.ClaimParams{Owner: "w", Total: 1, Now: clk.DBNow(),
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "block", Max: 1, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	later := clk.Now().Add(time.Hour)

	locked := make(chan struct{})
	proceed := make(chan struct{})
	rescued, rescueErr := inBackground(func() error {
		// janitor.rescueBatch's body, with a pause after ExpiredLeases.
		return b.st.InTx(ctx, func(tx *store.Store) error {
			expired, err := tx.ExpiredLeases(ctx, &later, 10)
			if err != nil {
				return err
			}
			require.Len(t, expired, 1)
			close(locked)
			<-proceed
			msg := "lease expired"
			_, err = tx.FinishTasks(ctx, store.FinishParams{ExpiredBefore: &later, Now: &later},
				[]store.Finish{{ID: id, Status: wftype.StatusPending, Error: &msg, RetryCount: 1, RetryIn: time.Second}})
			return err
		})
	})
	<-locked
	cancelled, cancelErr := b.cancelInBackground(ctx, id)
	b.waitLockWaiters(t, 1, cancelled, "the cancel by hand")
	close(proceed)
	awaitEnded(t, "the rescue or the cancel", rescued, cancelled)
	t.Logf("rescue: %v; cancel: %v", *rescueErr, *cancelErr)
	require.NoError(t, *rescueErr, "the rescue")
	if *cancelErr != nil {
		require.ErrorIs(t, *cancelErr, wftype.ErrConflict, "the cancel may only find the task ended")
	}
}

// TestCancelWithoutHookAndRunFailureDoNotDeadlock: a cancel by hand on a
// store without a step hook (an instance without workflows, `wf tasks
// cancel` without them) no longer takes the run's lock first, but its
// recorded step end (tasks.workflow_step_ends, FK to the run) needs a KEY
// SHARE lock on the run after it holds the task; a run failure holds the
// run and then waits for its PENDING tasks.
func TestCancelWithoutHookAndRunFailureDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, run, id := setupStuck(t)
	plain := store.New(b.pool) // no step hook

	locked := make(chan struct{})
	proceed := make(chan struct{})
	failed, failErr := inBackground(func() error {
		// A run's failure: its run locked, then its PENDING tasks cancelled.
		return b.st.InTx(ctx, func(tx *store.Store) error {
			runs, _, err := tx.LockWorkflowRuns(ctx, []uuid.UUID{run.ID})
			if err != nil {
				return err
			}
			close(locked)
			<-proceed
			_, err = tx.CancelPendingWorkflowTasks(ctx, runs[0], "the run failed", clk.DBNow())
			return err
		})
	})
	<-locked
	cancelled, cancelErr := inBackground(func() error {
		_, err := plain.CancelTask(ctx, id)
		return err
	})
	b.waitLockWaiters(t, 1, cancelled, "the cancel by hand")
	close(proceed)
	awaitEnded(t, "the failure or the cancel", failed, cancelled)
	t.Logf("failure: %v; cancel: %v", *failErr, *cancelErr)
	require.NoError(t, *failErr, "the run's failure")
	if *cancelErr != nil {
		require.ErrorIs(t, *cancelErr, wftype.ErrConflict, "the cancel may only find the task ended")
	}
}
