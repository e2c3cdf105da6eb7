package workflow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

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
	require.Equal(t, wftype.StepWaiting, step(t, s, "after").Status)

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
	require.Equal(t, wftype.StepWaiting, step(t, s, "after").Status)
	require.True(t, task.FinishedAt.Equal(*s.Run.FinishedAt))
	require.Len(t, s.Tasks, 1)
}
