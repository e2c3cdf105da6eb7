package workflow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestLeasedFinishAndCancelDoNotDeadlock: execution.FinishLeased (the
// remote worker's complete/fail, engine/worker) locked the step task
// (LockActiveTask) and only then, inside FinishTasks, the task's run; a
// cancel by hand locks the run, then the task. Interleaved, PostgreSQL
// aborted one of them.
func TestLeasedFinishAndCancelDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b, clk, _, id := setupStuck(t)
	claimed := b.claimBlocks(t, clk, 1, time.Hour)
	require.Len(t, claimed, 1)
	b.againstCancel(t, id, "the completion", func(ctx context.Context, tx *store.Store, pause func()) error {
		// FinishLeased's body, with a pause after the task's lock.
		if _, err := tx.LockActiveTask(ctx, id, store.WorkerLease{Owner: "w", Attempt: claimed[0].Attempts}); err != nil {
			return err
		}
		pause()
		_, err := tx.FinishTasks(ctx, store.FinishParams{Owner: "w", Now: clk.DBNow()},
			[]store.Finish{{ID: id, Status: wftype.StatusCompleted, Attempt: claimed[0].Attempts}})
		return err
	})
}

// TestJanitorRescueAndCancelDoNotDeadlock: the janitor's rescue locked the
// expired tasks (ExpiredLeases) and only then, inside FinishTasks, their
// runs; a cancel by hand locks the run, then the task.
func TestJanitorRescueAndCancelDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b, clk, _, id := setupStuck(t)
	require.Len(t, b.claimBlocks(t, clk, 1, time.Minute), 1)
	later := clk.Now().Add(time.Hour)
	b.againstCancel(t, id, "the rescue", func(ctx context.Context, tx *store.Store, pause func()) error {
		// janitor.rescueBatch's body, with a pause after ExpiredLeases.
		expired, _, err := tx.ExpiredLeases(ctx, &later, 10)
		if err != nil {
			return err
		}
		if len(expired) != 1 {
			return fmt.Errorf("found %d expired leases, want 1", len(expired))
		}
		pause()
		msg := "lease expired"
		_, err = tx.FinishTasks(ctx, store.FinishParams{ExpiredBefore: &later, Now: &later},
			[]store.Finish{{ID: id, Status: wftype.StatusPending, Error: &msg, RetryCount: 1, RetryIn: time.Second}})
		return err
	})
}

// TestJanitorRescueBeyondALockedTaskAndCancelDoNotDeadlock: ExpiredLeases
// locked the runs of the first expired tasks, then took tasks with SKIP
// LOCKED; with the first of them held by another transaction, it took the
// next one, whose run it had not locked, and FinishTasks then locked that
// run after its task: against a cancel by hand (run, then task) PostgreSQL
// aborted one of them (40P01). Now it takes only tasks whose runs it
// locked first.
func TestJanitorRescueBeyondALockedTaskAndCancelDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b, clk, _, _ := setupStuck(t)
	b.start(t, "stuck", `{}`)
	first := b.claimBlocks(t, clk, 1, time.Minute)
	clk.Advance(time.Second)
	second := b.claimBlocks(t, clk, 1, time.Minute) // its lease ends a second later
	require.Len(t, first, 1)
	require.Len(t, second, 1)
	held, id := first[0].ID, second[0].ID
	// Another transaction holds the first expired task (a heartbeat, a
	// completion, a cancel of its own run).
	release := b.holdTx(t, func(tx *store.Store) error {
		_, err := tx.DB().Exec(context.Background(), `SELECT 1 FROM tasks.tasks WHERE task_id = $1 FOR UPDATE`, held)
		return err
	})
	defer release()
	later := clk.Now().Add(time.Hour)
	b.againstCancel(t, id, "the rescue", func(ctx context.Context, tx *store.Store, pause func()) error {
		// janitor.rescueBatch's body with a batch of one, with a pause
		// after ExpiredLeases.
		expired, _, err := tx.ExpiredLeases(ctx, &later, 1)
		if err != nil {
			return err
		}
		pause()
		if len(expired) == 0 {
			return nil // the first expired task is held: nothing taken this time
		}
		if expired[0].ID != id {
			return fmt.Errorf("took task %s, want %s", expired[0].ID, id)
		}
		msg := "lease expired"
		_, err = tx.FinishTasks(ctx, store.FinishParams{ExpiredBefore: &later, Now: &later},
			[]store.Finish{{ID: id, Status: wftype.StatusPending, Error: &msg, RetryCount: 1, RetryIn: time.Second}})
		return err
	})
}

// againstCancel runs first in a transaction, and a cancel by hand of task
// id once first has called pause (which holds it until the cancel waits for
// a lock), and checks that neither deadlocks: first succeeds, the cancel
// succeeds or finds the task ended.
func (b *bundle) againstCancel(t *testing.T, id uuid.UUID, what string,
	first func(ctx context.Context, tx *store.Store, pause func()) error) {
	t.Helper()
	ctx := context.Background()
	locked, proceed := make(chan struct{}), make(chan struct{})
	done, firstErr := inBackground(func() error {
		return b.st.InTx(ctx, func(tx *store.Store) error {
			return first(ctx, tx, func() { close(locked); <-proceed })
		})
	})
	select {
	case <-locked:
	case <-done:
		t.Fatalf("%s ended before its pause: %v", what, *firstErr)
	}
	cancelled, cancelErr := b.cancelInBackground(ctx, id)
	b.waitLockWaiters(t, 1, cancelled, "the cancel by hand")
	close(proceed)
	awaitEnded(t, what+" or the cancel", done, cancelled)
	t.Logf("%s: %v; cancel: %v", what, *firstErr, *cancelErr)
	require.NoError(t, *firstErr, what)
	if *cancelErr != nil {
		require.ErrorIs(t, *cancelErr, wftype.ErrConflict, "the cancel may only find the task ended")
	}
}

// claimBlocks claims up to n of the bundle's "block" tasks for owner "w".
func (b *bundle) claimBlocks(t *testing.T, clk *clock.Fake, n int, lease time.Duration) []wftype.Task {
	t.Helper()
	claimed, err := b.st.ClaimTasks(context.Background(), store.ClaimParams{Owner: "w", Total: n, Now: clk.DBNow(),
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "block", Max: n, Lease: lease}}})
	require.NoError(t, err)
	return claimed
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
