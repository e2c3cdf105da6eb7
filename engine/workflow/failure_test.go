package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/wftype"
)

// waitStarted waits until the gate items want have all started.
func (b *bundle) waitStarted(t *testing.T, want ...int) {
	t.Helper()
	missing := map[int]bool{}
	for _, i := range want {
		missing[i] = true
	}
	deadline := time.After(90 * time.Second)
	for len(missing) > 0 {
		select {
		case i := <-b.h.gates.started:
			delete(missing, i)
		case <-deadline:
			t.Fatalf("items %v never started", missing)
		}
	}
}

// itemTask is one task of a for_each step.
type itemTask struct {
	item       int
	status     wftype.TaskStatus
	started    bool
	finishedAt *time.Time
}

// itemTasks lists the tasks of a run's step, by item then age.
func (b *bundle) itemTasks(t *testing.T, run uuid.UUID, step string) []itemTask {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
SELECT coalesce(workflow_item, -1), status, started_at IS NOT NULL, finished_at FROM tasks.tasks
WHERE workflow_run_id = $1 AND workflow_step = $2 ORDER BY workflow_item, task_id`, run, step)
	require.NoError(t, err)
	defer rows.Close()
	var out []itemTask
	for rows.Next() {
		var it itemTask
		var status string
		require.NoError(t, rows.Scan(&it.item, &status, &it.started, &it.finishedAt))
		it.status = wftype.TaskStatus(status)
		out = append(out, it)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestFailedRunCancelsItsPendingWork: a fan-out of 50 items, two at a time,
// beside a step "side" whose task runs all along. Item 4 is created while
// the items' task type is paused (so it waits PENDING), then item 3 fails
// for good. The run fails, and in the same transaction item 4's task is
// CANCELLED without having started; no item after it is ever created, the
// step after the fan-out never starts. Side's task, running when the run
// failed, is left to finish: its step completes, the run stays FAILED.
// Retried, the run starts the items again (side keeps its outputs) and
// completes.
func TestFailedRunCancelsItsPendingWork(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	ctx := context.Background()
	run := b.start(t, "fan50", `{}`)
	g := &b.h.gates

	b.waitStarted(t, 0, 1, 100)
	g.of(0) <- false
	b.waitStarted(t, 2)
	g.of(1) <- false
	b.waitStarted(t, 3)
	_, _, err := b.st.PauseQueue(ctx, store.PauseParams{Kind: store.PauseTaskType, Name: "gate"})
	require.NoError(t, err)
	// Item 2 ends: item 4 is created, and waits on the pause.
	g.of(2) <- false
	require.Eventually(t, func() bool {
		tasks := b.itemTasks(t, run.ID, "each")
		return len(tasks) == 5 && tasks[4].status == wftype.StatusPending
	}, 90*time.Second, 20*time.Millisecond, "item 4 was never created")
	// Item 3 fails for good: the run fails with it, item 4 is cancelled.
	g.of(3) <- true
	s := b.wait(t, run.ID, wftype.RunFailed)
	require.Contains(t, *s.Run.Error, "item 3 is bad")
	require.Equal(t, wftype.StepFailed, step(t, s, "each").Status)
	require.Equal(t, wftype.StepRunning, step(t, s, "side").Status, "its task runs on")
	requireNotRun(t, s, "after")

	tasks := b.itemTasks(t, run.ID, "each")
	require.Len(t, tasks, 5, "no item is created after the run failed")
	var statuses []wftype.TaskStatus
	for _, it := range tasks {
		statuses = append(statuses, it.status)
	}
	require.Equal(t, []wftype.TaskStatus{wftype.StatusCompleted, wftype.StatusCompleted, wftype.StatusCompleted, wftype.StatusFailed, wftype.StatusCancelled}, statuses)
	require.False(t, tasks[4].started, "the pending item never started")
	require.NotNil(t, s.Run.FinishedAt)
	require.True(t, tasks[4].finishedAt.Equal(*s.Run.FinishedAt),
		"item 4 was cancelled at %s, the run failed at %s: not in one transaction", tasks[4].finishedAt, s.Run.FinishedAt)

	// The running task of side ends well: its step completes, the run
	// stays FAILED. Nothing else starts once the pause is lifted.
	_, err = b.st.ResumeQueue(ctx, store.PauseTaskType, "gate")
	require.NoError(t, err)
	g.of(100) <- false
	require.Eventually(t, func() bool {
		s, err = b.e.Workflows().Get(ctx, b.st, run.ID)
		require.NoError(t, err)
		return step(t, s, "side").Status == wftype.StepCompleted
	}, 90*time.Second, 20*time.Millisecond, "side never completed")
	require.Equal(t, wftype.RunFailed, s.Run.Status)
	require.Len(t, b.itemTasks(t, run.ID, "each"), 5)
	require.Equal(t, 1, events(t, b.pool, workflow.EventFailed, run.ID))
	require.Zero(t, events(t, b.pool, workflow.EventCompleted, run.ID))

	g.open()
	retried, err := b.e.Workflows().Retry(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, 2, retried.Attempt)
	s = b.wait(t, run.ID, wftype.RunCompleted)
	require.Equal(t, wftype.StepCompleted, step(t, s, "after").Status)
	require.Len(t, b.itemTasks(t, run.ID, "each"), 5+50)
	require.Len(t, b.itemTasks(t, run.ID, "side"), 1, "side completed on the first attempt")
}

// TestCancellingARunningStepTaskFailsTheRun: a step's running task
// cancelled by hand fails its run as the cancel commits (the step
// CANCELLED, workflow.failed emitted); retried once the task ended, the run
// starts the step again.
func TestCancellingARunningStepTaskFailsTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	run := b.start(t, "stuck", `{}`)
	b.waitBlocked(t)
	id := b.onlyTask(t, run.ID)
	_, err := b.st.CancelTask(context.Background(), id)
	require.NoError(t, err)
	s, err := b.e.Workflows().Get(context.Background(), b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status, "the cancel and the run's end commit together")
	require.Equal(t, wftype.StepCancelled, step(t, s, "wait").Status)
	require.Contains(t, *s.Run.Error, fmt.Sprintf("step wait was cancelled: its task (%s) was cancelled", id))
	require.Equal(t, 1, events(t, b.pool, workflow.EventFailed, run.ID))

	// Retried once the task ended, the run starts the step again.
	retried := b.retryOnceEnded(t, run.ID)
	require.Equal(t, wftype.RunRunning, retried.Status)
	b.waitBlocked(t)
	_, err = b.e.Workflows().Cancel(context.Background(), b.st, run.ID)
	require.NoError(t, err)
}

// TestCancellingAPendingStepTaskFailsTheRun: a step task cancelled by hand
// before it started fails its run in the cancel's transaction (the run's
// end and the task's share the transaction's time); nothing downstream is
// created.
func TestCancellingAPendingStepTaskFailsTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, false)
	run := b.start(t, "stuck", `{}`)
	id := b.onlyTask(t, run.ID)
	task, err := b.st.CancelTask(context.Background(), id)
	require.NoError(t, err)
	s, err := b.e.Workflows().Get(context.Background(), b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status)
	require.Equal(t, wftype.StepCancelled, step(t, s, "wait").Status)
	requireNotRun(t, s, "after")
	require.True(t, task.FinishedAt.Equal(*s.Run.FinishedAt))
	require.Len(t, s.Tasks, 1)
}

// lockWaiters counts the sessions of the test's database waiting for a
// lock.
func (b *bundle) lockWaiters(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `
SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
	return n
}

// waitLockWaiters waits until n sessions of the test's database wait for a
// lock, or fails the test once done is closed first (what should have
// waited went on).
func (b *bundle) waitLockWaiters(t *testing.T, n int, done <-chan struct{}, what string) {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for b.lockWaiters(t) < n {
		select {
		case <-done:
			return
		case <-deadline:
			t.Fatalf("%s never waited for a lock", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// setupStuck builds an engine that does not run, on a fake clock, with a
// run of workflow stuck started: its step wait's task is PENDING.
func setupStuck(t *testing.T) (*bundle, *clock.Fake, wftype.WorkflowRun, uuid.UUID) {
	t.Helper()
	clk := clock.NewFake(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	b := setup(t, clk, false)
	run := b.start(t, "stuck", `{}`)
	return b, clk, run, b.onlyTask(t, run.ID)
}

// TestFailingRunWaitsForAClaimHoldingItsPendingTask: a claim statement
// locks the PENDING task of a step (the oldest of its type) and, its
// batch full with a task of higher priority of another type, does not take
// it. While the claim's transaction is open, the run times out. The
// failure waits for the claim's lock instead of skipping the task, so the
// task is CANCELLED in the failure's transaction and its step CANCELLED:
// no task of a failed run stays PENDING to be claimed and run later. A
// claim that does take a step task before the failure is a claim that came
// first: that task is ACTIVE, left to finish like the run's other running
// tasks.
func TestFailingRunWaitsForAClaimHoldingItsPendingTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, run, stepTask := setupStuck(t)
	prio := 9
	other, err := b.e.Client().Enqueue(ctx, client.Request{TaskType: "echo", Inputs: json.RawMessage(`{}`), Priority: &prio})
	require.NoError(t, err)

	var tasks []wftype.Task
	release := b.holdTx(t, func(tx *store.Store) (err error) {
		tasks, err = tx.ClaimTasks(ctx, store.ClaimParams{
			Owner: "claimer", Total: 1, Now: clk.DBNow(),
			Slots: []store.ClaimSlot{
				{Mode: wftype.ModeAsync, TaskType: "block", Max: 1, Lease: time.Minute},
				{Mode: wftype.ModeAsync, TaskType: "echo", Max: 1, Lease: time.Minute},
			},
		})
		return err
	})
	require.Len(t, tasks, 1)
	require.Equal(t, other.Task.ID, tasks[0].ID, "the claim takes the task of higher priority")

	clk.Advance(time.Hour + time.Second)
	var n int
	expired, expireErr := inBackground(func() (err error) {
		n, err = b.e.Workflows().Expire(ctx, b.st, 10)
		return err
	})
	b.waitLockWaiters(t, 1, expired, "the run's failure")
	release()
	awaitEnded(t, "the run's failure", expired)
	require.NoError(t, *expireErr)
	require.Equal(t, 1, n)

	s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status)
	require.Len(t, s.Tasks, 1)
	require.Equal(t, stepTask, s.Tasks[0].TaskID)
	require.Equal(t, wftype.StatusCancelled, s.Tasks[0].Status, "a task of a failed run was left PENDING")
	require.Equal(t, wftype.StepCancelled, step(t, s, "wait").Status)

	// A claim that takes the step task of a second run before that run
	// fails: the task runs on, ACTIVE, its step RUNNING.
	run2 := b.start(t, "stuck", `{}`)
	taken, err := b.st.ClaimTasks(ctx, store.ClaimParams{
		Owner: "claimer", Total: 1, Now: clk.DBNow(),
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "block", Max: 1, Lease: time.Minute}},
	})
	require.NoError(t, err)
	require.Len(t, taken, 1)
	clk.Advance(time.Hour + time.Second)
	n, err = b.e.Workflows().Expire(ctx, b.st, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	s, err = b.e.Workflows().Get(ctx, b.st, run2.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status)
	require.Equal(t, wftype.StatusActive, s.Tasks[0].Status)
	require.Equal(t, wftype.StepRunning, step(t, s, "wait").Status)
}

// TestFailingRunAndCancelByHandDoNotDeadlock: a run's failure waits for
// the locks on its PENDING tasks, so a cancel by hand of one of them must
// not hold the task while it waits for the run. Here the run's row is held
// by a third transaction while first the run's failure (a timeout) and
// then a cancel by hand of its PENDING task queue up behind it: the
// failure is granted the run first. Both end without error (no deadlock):
// the task is CANCELLED once, the run FAILED.
func TestFailingRunAndCancelByHandDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, run, id := setupStuck(t)
	clk.Advance(time.Hour + time.Second)

	releaseRun := b.holdRun(t, run.ID)

	expired, expireErr := inBackground(func() error {
		_, err := b.e.Workflows().Expire(ctx, b.st, 10)
		return err
	})
	b.waitLockWaiters(t, 1, expired, "the run's failure")
	cancelled, cancelErr := b.cancelInBackground(ctx, id)
	b.waitLockWaiters(t, 2, cancelled, "the cancel by hand")
	releaseRun()
	awaitEnded(t, "the failure or the cancel", expired, cancelled)
	require.NoError(t, *expireErr)
	if *cancelErr != nil {
		// The failure cancelled the task first: the cancel by hand finds
		// it CANCELLED.
		require.ErrorIs(t, *cancelErr, wftype.ErrConflict)
	}
	s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status)
	require.Equal(t, wftype.StatusCancelled, s.Tasks[0].Status)
	require.Equal(t, 1, events(t, b.pool, workflow.EventFailed, run.ID))
}

// TestFailingRunsBesideClaimsAndCancels: 40 runs, each with a PENDING step
// task, time out while four claimers claim (each claim locks more tasks
// than it takes) and two goroutines cancel step tasks by hand. Nothing
// fails (no deadlock), every run ends FAILED, and none of their tasks is
// left PENDING: each was claimed (ACTIVE) or cancelled.
func TestFailingRunsBesideClaimsAndCancels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	b := setup(t, clk, false)
	const runs = 40
	var ids []uuid.UUID
	var tasks []uuid.UUID
	for range runs {
		r := b.start(t, "stuck", `{}`)
		ids = append(ids, r.ID)
		tasks = append(tasks, b.onlyTask(t, r.ID))
	}
	prio := 9
	for range runs {
		_, err := b.e.Client().Enqueue(ctx, client.Request{TaskType: "echo", Inputs: json.RawMessage(`{}`), Priority: &prio})
		require.NoError(t, err)
	}
	clk.Advance(time.Hour + time.Second)

	stop := make(chan struct{})
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := b.st.ClaimTasks(ctx, store.ClaimParams{
					Owner: "claimer", Total: 1, Now: clk.DBNow(),
					Slots: []store.ClaimSlot{
						{Mode: wftype.ModeAsync, TaskType: "block", Max: 1, Lease: time.Minute},
						{Mode: wftype.ModeAsync, TaskType: "echo", Max: 1, Lease: time.Minute},
					},
				})
				if err != nil {
					errs <- fmt.Errorf("claim: %w", err)
					return
				}
			}
		}()
	}
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < runs; i += 4 {
				if _, err := b.st.CancelTask(ctx, tasks[i]); err != nil && !errors.Is(err, wftype.ErrConflict) {
					errs <- fmt.Errorf("cancel: %w", err)
					return
				}
			}
		}()
	}
	expired := 0
	for expired < runs {
		n, err := b.e.Workflows().Expire(ctx, b.st, 5)
		require.NoError(t, err)
		if n == 0 {
			// The rest failed through the cancels by hand.
			var left int
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM tasks.workflow_runs WHERE status = 'RUNNING'`).Scan(&left))
			if left == 0 {
				break
			}
		}
		expired += n
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var failed, pending int
	require.NoError(t, b.pool.QueryRow(ctx, `
SELECT (SELECT count(*) FROM tasks.workflow_runs WHERE run_id = ANY ($1) AND status = 'FAILED'),
       (SELECT count(*) FROM tasks.tasks WHERE workflow_run_id = ANY ($1) AND status = 'PENDING')`, ids).Scan(&failed, &pending))
	require.Equal(t, runs, failed)
	require.Zero(t, pending, "tasks of failed runs left PENDING")
}

// TestStepTheClientRefusesFailsItsRun: the task of step "second" is
// refused by the client's checks when it is created (its dedup key, from
// the run's inputs, is longer than a dedup key may be). The completion of
// step "first" that unblocks it is written, with its run's step pass, in
// one transaction; the refusal fails the step and the run in that
// transaction, as a bad input would, instead of failing the transaction:
// then the completion would be retried, and refused, until the task's
// lease ran out, and the task would run again and again, its run stuck
// RUNNING. Another run finishing in the same instance is not held up.
func TestStepTheClientRefusesFailsItsRun(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	long := strings.Repeat("x", spec.MaxDedupKeyLength+1)
	run := b.start(t, "longkey", fmt.Sprintf(`{"k": %q}`, long))
	other := b.start(t, "longkey", `{"k": "short"}`)
	s := b.wait(t, run.ID, wftype.RunFailed)
	require.Equal(t, wftype.StepCompleted, step(t, s, "first").Status)
	require.Equal(t, wftype.StepFailed, step(t, s, "second").Status)
	require.Contains(t, *s.Run.Error, "dedup_key")
	require.Len(t, s.Tasks, 1, "no task of step second")
	require.Equal(t, wftype.StatusCompleted, s.Tasks[0].Status)
	require.Equal(t, 1, s.Tasks[0].Attempts, "the task of step first ran once")
	require.Equal(t, 1, events(t, b.pool, workflow.EventFailed, run.ID))
	b.wait(t, other.ID, wftype.RunCompleted)
}

// TestCompletionAndCancelByHandDoNotDeadlock: while a run is locked, a cancel
// by hand of its ACTIVE step task waits for the run (it locks runs before
// tasks), then the task's completion comes. The completion must take the
// run before the task too: if it held the task while waiting for the run,
// the cancel, once it has the run, would wait for the task and PostgreSQL
// would abort one of them ("deadlock detected").
func TestCompletionAndCancelByHandDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, run, id := setupStuck(t)
	claimed, err := b.st.ClaimTasks(ctx, store.ClaimParams{Owner: "w", Total: 1, Now: clk.DBNow(),
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "block", Max: 1, Lease: time.Hour}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, id, claimed[0].ID)

	releaseRun := b.holdRun(t, run.ID)

	cancelled, cancelErr := b.cancelInBackground(ctx, id)
	b.waitLockWaiters(t, 1, cancelled, "the cancel by hand")
	finished, finishErr := inBackground(func() error {
		_, err := b.st.FinishTasks(ctx, store.FinishParams{Owner: "w", Now: clk.DBNow()},
			[]store.Finish{{ID: id, Status: wftype.StatusCompleted, Attempt: claimed[0].Attempts}})
		return err
	})
	b.waitLockWaiters(t, 2, finished, "the completion")
	releaseRun()
	awaitEnded(t, "the cancel or the completion", cancelled, finished)
	require.NoError(t, *cancelErr)
	require.NoError(t, *finishErr)
	s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status, "the cancel came first: its step, and the run, failed")
	require.Equal(t, wftype.StatusCancelled, s.Tasks[0].Status)
}

// TestStartRefusesAFirstStepTheClientRefuses: a run whose first step's task
// the client refuses (a dedup key from the run's inputs over the limit) is
// not started: Start answers the client's error (the API's 400) and writes
// no run, as it did before a refusal in the step pass of a completion was
// made to fail the step instead (TestStepTheClientRefusesFailsItsRun).
func TestStartRefusesAFirstStepTheClientRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, false)
	long := strings.Repeat("x", spec.MaxDedupKeyLength+1)
	_, err := b.e.Workflows().Start(context.Background(), b.st, workflow.StartRequest{
		Workflow: "longkeyfirst", Inputs: json.RawMessage(fmt.Sprintf(`{"k": %q}`, long))})
	require.ErrorContains(t, err, "dedup_key")
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM tasks.workflow_runs WHERE workflow = 'longkeyfirst'`).Scan(&n))
	require.Zero(t, n, "no run written")
	run := b.start(t, "longkeyfirst", `{"k": "short"}`)
	require.Equal(t, wftype.RunRunning, run.Status)
}

// holdRun locks run id in a transaction of its own (holdTx).
func (b *bundle) holdRun(t *testing.T, id uuid.UUID) (release func()) {
	return b.holdTx(t, func(tx *store.Store) error {
		_, _, err := tx.LockWorkflowRuns(context.Background(), []uuid.UUID{id})
		return err
	})
}

// holdTx runs fn in a transaction of its own, which it keeps open until the
// returned release is called (the test's end at the latest); release then
// waits for the transaction to commit. holdTx returns once fn has returned,
// and fails the test when fn failed.
func (b *bundle) holdTx(t *testing.T, fn func(tx *store.Store) error) (release func()) {
	t.Helper()
	ran := make(chan error, 1)
	unlock := make(chan struct{})
	unlockOnce := sync.OnceFunc(func() { close(unlock) })
	t.Cleanup(unlockOnce) // a failed test must not leave the transaction open
	done := make(chan error, 1)
	go func() {
		done <- b.st.InTx(context.Background(), func(tx *store.Store) error {
			err := fn(tx)
			ran <- err
			if err != nil {
				return err
			}
			<-unlock
			return nil
		})
	}()
	if err := <-ran; err != nil {
		t.Fatalf("the transaction held failed: %v", err)
	}
	return func() {
		unlockOnce()
		require.NoError(t, <-done)
	}
}

// inBackground runs fn in a goroutine: done is closed once fn has returned,
// and *err is then what it returned.
func inBackground(fn func() error) (done chan struct{}, err *error) {
	done, err = make(chan struct{}), new(error)
	go func() {
		defer close(done)
		*err = fn()
	}()
	return done, err
}

// cancelInBackground cancels task id by hand (the store's CancelTask, as
// the API's cancel route does) in a goroutine (inBackground).
func (b *bundle) cancelInBackground(ctx context.Context, id uuid.UUID) (done chan struct{}, err *error) {
	return inBackground(func() error {
		_, err := b.st.CancelTask(ctx, id)
		return err
	})
}

// awaitEnded waits, with a generous deadline, until every channel is closed.
func awaitEnded(t *testing.T, what string, chans ...chan struct{}) {
	t.Helper()
	for _, ch := range chans {
		select {
		case <-ch:
		case <-time.After(90 * time.Second):
			t.Fatalf("%s never ended", what)
		}
	}
}

// requireNotRun checks that a step of a failed run that never started is
// CANCELLED, saying it did not run (it showed WAITING, as if it might
// still run); a retry runs it again.
func requireNotRun(t *testing.T, s workflow.Status, name string) {
	t.Helper()
	st := step(t, s, name)
	require.Equal(t, wftype.StepCancelled, st.Status, name)
	require.NotNil(t, st.Error, name)
	require.Contains(t, *st.Error, "step "+name+" did not run: workflow run ")
	require.Zero(t, st.Started, name)
}
