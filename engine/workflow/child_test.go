package workflow_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// childSpecs: parent starts a child run (call) and one per item of a list
// (fan), then after reads their outputs; child doubles its n, and blocks
// when asked; bad_parent's child fails; orphaning fails its own step while
// its child blocks.
const childSpecs = `
kind: TaskType
name: echo
handler: {builtin: echo}
max_retries: 0
outputs: {type: object, properties: {got: {type: object, properties: {n: {type: integer}}}}}
---
kind: TaskType
name: block
handler: {builtin: block}
---
kind: TaskType
name: leak
handler: {builtin: leak}
max_retries: 0
---
kind: Workflow
name: child
inputs: {type: object, required: [n], properties: {n: {type: integer}, block: {type: boolean}}}
steps:
  work: {task_type: echo, inputs: {n: inputs.n}}
  wait: {task_type: block, depends_on: [work], when: 'inputs.block ?? false'}
outputs:
  doubled: 'steps.work.outputs.got.n * 2'
---
kind: Workflow
name: parent
inputs: {type: object, properties: {n: {type: integer}, block: {type: boolean}}}
steps:
  call: {workflow: child, inputs: {n: 'inputs.n ?? 1', block: 'inputs.block ?? false'}}
  fan: {workflow: child, for_each: '[1, 2, 3]', concurrency: 2, inputs: {n: item}}
  after:
    task_type: echo
    depends_on: [call, fan]
    inputs: {d: steps.call.outputs.doubled, all: 'map(steps.fan.outputs, .doubled)'}
outputs:
  d: steps.call.outputs.doubled
---
kind: Workflow
name: bad_child
steps:
  boom: {task_type: leak}
---
kind: Workflow
name: bad_parent
steps:
  call: {workflow: bad_child}
---
kind: Workflow
name: orphaning
steps:
  call: {workflow: child, inputs: {n: '1', block: 'true'}}
  boom: {task_type: leak, inputs: {url: '"x"'}}
  later: {task_type: echo, depends_on: [call, boom]}
`

// setupSpecs builds an engine over specs (the test builtins), and runs it
// when run is set.
func setupSpecs(t *testing.T, specs string, run bool) *bundle {
	t.Helper()
	pool := dbtest.NewPool(t)
	set := compileSpecs(t, specs)
	h := &handlers{blocked: make(chan struct{}, 10), gates: gates{started: make(chan int, 200)}}
	e, err := engine.New(engine.Config{
		Name: "wf-" + uuid.NewString()[:8], Pool: pool, Specs: set, Registry: h.registry(),
		PollInterval: 100 * time.Millisecond, Slots: 20, NoEventConsumer: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	if run {
		runEngine(t, e)
	}
	return &bundle{pool: pool, e: e, st: e.Store(), h: h}
}

// compileSpecs compiles specs with the test builtins.
func compileSpecs(t *testing.T, specs string) *spec.Set {
	t.Helper()
	set, err := spec.Compile([]spec.Source{{Name: "children.yaml", Data: []byte(specs)}}, spec.Options{Builtins: testBuiltins})
	require.NoError(t, err)
	return set
}

// children reads the child runs of a run.
func (b *bundle) children(t *testing.T, parent uuid.UUID) []wftype.WorkflowRun {
	t.Helper()
	runs, err := b.st.ChildWorkflowRuns(context.Background(), parent)
	require.NoError(t, err)
	return runs
}

// startBlockedParent starts a parent run whose child, of its step call, is
// blocked; it answers the bundle, the parent and that child.
func startBlockedParent(t *testing.T) (*bundle, wftype.WorkflowRun, wftype.WorkflowRun) {
	t.Helper()
	b := setupSpecs(t, childSpecs, true)
	run := b.start(t, "parent", `{"block": true}`)
	b.waitBlocked(t)
	var blocked wftype.WorkflowRun
	for _, k := range b.children(t, run.ID) {
		if k.ParentStep == "call" {
			blocked = k
		}
	}
	return b, run, blocked
}

// TestChildRunCompletesItsStep: a parent's child step completes with its
// child run's outputs, a for_each child step with the list of its
// children's, and the next step reads them as typed; every child shows
// its parent, the parent's view its children, and the parent's outputs are
// its workflow's outputs expressions.
func TestChildRunCompletesItsStep(t *testing.T) {
	t.Parallel()
	b := setupSpecs(t, childSpecs, true)
	run := b.start(t, "parent", `{"n": 5}`)
	s := b.wait(t, run.ID, wftype.RunCompleted)
	require.JSONEq(t, `{"doubled": 10}`, string(step(t, s, "call").Outputs))
	require.JSONEq(t, `[{"doubled": 2}, {"doubled": 4}, {"doubled": 6}]`, string(step(t, s, "fan").Outputs))
	require.JSONEq(t, `{"got": {"d": 10, "all": [2, 4, 6]}}`, string(step(t, s, "after").Outputs))
	require.JSONEq(t, `{"d": 10}`, string(s.Run.Outputs))

	kids := b.children(t, run.ID)
	require.Len(t, kids, 4, "one child for call, one per item of fan")
	items := map[int]bool{}
	for _, k := range kids {
		require.Equal(t, wftype.RunCompleted, k.Status)
		require.NotNil(t, k.ParentRunID)
		require.Equal(t, run.ID, *k.ParentRunID)
		require.Equal(t, "system", k.SchemaName, "a child runs in its parent's tenant")
		if k.ParentStep == "fan" {
			items[k.ParentItem] = true
		} else {
			require.Equal(t, "call", k.ParentStep)
			require.Equal(t, -1, k.ParentItem)
		}
	}
	require.Equal(t, map[int]bool{0: true, 1: true, 2: true}, items)

	v := b.e.Workflows().View(s, "/x")
	for _, sv := range v.Steps {
		switch sv.Step {
		case "call":
			require.Equal(t, "child", sv.Workflow)
			require.Len(t, sv.Runs, 1)
		case "fan":
			require.Len(t, sv.Runs, 3)
		case "after":
			require.Equal(t, "echo", sv.TaskType)
			require.Empty(t, sv.Runs)
		}
	}
	cs, err := b.e.Workflows().Get(context.Background(), b.st, kids[0].ID)
	require.NoError(t, err)
	cv := b.e.Workflows().View(cs, "/y")
	require.NotNil(t, cv.ParentRunID)
	require.Equal(t, run.ID.String(), *cv.ParentRunID)
	require.Equal(t, 1, events(t, b.pool, "workflow.completed", run.ID), "the parent ends once")
	var parentOf string
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT payload->>'parent_run_id' FROM tasks.events WHERE event_type = 'workflow.completed' AND payload->>'run_id' = $1`,
		kids[0].ID.String()).Scan(&parentOf))
	require.Equal(t, run.ID.String(), parentOf, "a child's workflow.completed names its parent")
}

// TestFailedChildFailsItsStep: a child run that fails fails its parent's
// step, and the parent, with the child's reason.
func TestFailedChildFailsItsStep(t *testing.T) {
	t.Parallel()
	b := setupSpecs(t, childSpecs, true)
	run := b.start(t, "bad_parent", `{}`)
	s := b.wait(t, run.ID, wftype.RunFailed)
	call := step(t, s, "call")
	require.Equal(t, wftype.StepFailed, call.Status)
	require.NotNil(t, call.Error)
	require.Contains(t, *call.Error, "(workflow bad_child) ended FAILED")
	require.Contains(t, *call.Error, "403 Forbidden", "the child's reason")
	kids := b.children(t, run.ID)
	require.Len(t, kids, 1)
	require.Equal(t, wftype.RunFailed, kids[0].Status)
}

// TestCancellingAParentCancelsItsChild: cancelling a run whose child run
// is running cancels the child and the child's running task; the parent
// ends CANCELLED once, and the child's cancellation does not fail it.
func TestCancellingAParentCancelsItsChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, run, blocked := startBlockedParent(t)
	require.Equal(t, wftype.RunRunning, blocked.Status)

	_, err := b.e.Workflows().Cancel(ctx, b.st, run.ID)
	require.NoError(t, err)
	cs := b.wait(t, blocked.ID, wftype.RunCancelled)
	for _, task := range cs.Tasks {
		require.True(t, task.Status.Terminal(), "task %s of the child is %s", task.TaskID, task.Status)
		if task.Step == "wait" {
			require.Eventually(t, func() bool {
				got, err := b.st.GetTask(ctx, task.TaskID)
				require.NoError(t, err)
				return got.Status == wftype.StatusCancelled
			}, 90*time.Second, 20*time.Millisecond)
		}
	}
	s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunCancelled, s.Run.Status, "the child's end does not turn the cancelled parent into a failure")
	for _, k := range b.children(t, run.ID) {
		require.True(t, k.Status != wftype.RunRunning, "child %s (%s) is still running", k.ID, k.ParentStep)
	}
	require.Equal(t, 1, events(t, b.pool, "workflow.cancelled", run.ID))
	require.Zero(t, events(t, b.pool, "workflow.failed", run.ID))
}

// TestCancellingAChildFailsItsParent: a child run cancelled on its own
// fails its parent's step (and the parent) with the reason.
func TestCancellingAChildFailsItsParent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, run, blocked := startBlockedParent(t)
	_, err := b.e.Workflows().Cancel(ctx, b.st, blocked.ID)
	require.NoError(t, err)
	s := b.wait(t, run.ID, wftype.RunFailed)
	require.Equal(t, wftype.StepFailed, step(t, s, "call").Status)
	require.Contains(t, *step(t, s, "call").Error, "ended CANCELLED")
}

// TestFailedParentCancelsItsRunningChild: a parent that fails by another
// step (in the transaction of that step's end, which does not touch its
// children) has its running child cancelled by the step pass.
func TestFailedParentCancelsItsRunningChild(t *testing.T) {
	t.Parallel()
	b := setupSpecs(t, childSpecs, true)
	run := b.start(t, "orphaning", `{}`)
	s := b.wait(t, run.ID, wftype.RunFailed)
	require.True(t, strings.Contains(*s.Run.Error, "step boom failed"), *s.Run.Error)
	kids := b.children(t, run.ID)
	require.Len(t, kids, 1)
	b.wait(t, kids[0].ID, wftype.RunCancelled)
}
