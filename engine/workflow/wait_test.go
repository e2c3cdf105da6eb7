package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/clock"
	wfevents "github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// waitSpecs: a run of order waits for its order's payment (an hour at
// most, then goes on TIMED_OUT), for an approval (a day at most, then
// fails), sleeps ten minutes, then ships (a task) unless payment timed out.
const waitSpecs = `
kind: TaskType
name: nothing
handler: {builtin: nothing}
---
kind: Workflow
name: order
timeout: 72h
inputs: {type: object, required: [order_id], properties: {order_id: {type: string}, ship_at: {type: string}}}
steps:
  paid:
    wait_for_event:
      event_type: order.paid
      payload: {type: object, required: [order_id], properties: {order_id: {type: string}, amount: {type: number}}}
      match: 'event.payload.order_id == inputs.order_id'
      timeout: 1h
      on_timeout: continue
  approve:
    depends_on: [paid]
    approval:
      payload: {type: object, required: [approved], properties: {approved: {type: boolean}, by: {type: string}}}
      timeout: 24h
  cool_down:
    depends_on: [approve]
    sleep: {duration: 10m}
  until_ship:
    depends_on: [cool_down]
    sleep: {until: 'inputs.ship_at ?? "2000-01-01T00:00:00Z"'}
  ship:
    task_type: nothing
    depends_on: [until_ship]
    when: 'steps.paid.status != "TIMED_OUT"'
    inputs: {by: steps.approve.outputs.by, amount: steps.paid.outputs.amount}
`

// waitBundle is a workflow runtime on a database of its own, driven by a
// fake clock: no engine runs, the test calls the wait pass itself.
type waitBundle struct {
	ctx context.Context
	clk *clock.Fake
	e   *engine.Engine
	st  *store.Store
	wfs *workflow.Workflows
	em  *wfevents.Emitter
}

func setupWaits(t *testing.T) *waitBundle {
	t.Helper()
	pool := dbtest.NewPool(t)
	set, err := spec.Compile([]spec.Source{{Name: "waits.yaml", Data: []byte(waitSpecs)}}, spec.Options{Builtins: testBuiltins})
	require.NoError(t, err)
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	e, err := engine.New(engine.Config{Name: "wf-" + uuid.NewString()[:8], Pool: pool, Specs: set, Registry: (&handlers{}).registry(), Clock: clk,
		NoEventConsumer: true, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = e.Store().EnsurePartitionsSpan(ctx, clk.Now().AddDate(0, -1, 0), clk.Now().AddDate(0, 2, 0))
	require.NoError(t, err)
	return &waitBundle{ctx: ctx, clk: clk, e: e, st: e.Store(), wfs: e.Workflows(), em: e.Emitter()}
}

func (b *waitBundle) start(t *testing.T, schema, inputs string) uuid.UUID {
	t.Helper()
	run, err := b.wfs.Start(b.ctx, b.st, workflow.StartRequest{Workflow: "order", SchemaName: schema, Inputs: json.RawMessage(inputs)})
	require.NoError(t, err)
	return run.ID
}

func (b *waitBundle) steps(t *testing.T, id uuid.UUID) (wftype.WorkflowRun, map[string]wftype.WorkflowStep) {
	t.Helper()
	s, err := b.wfs.Get(b.ctx, b.st, id)
	require.NoError(t, err)
	out := map[string]wftype.WorkflowStep{}
	for _, st := range s.Steps {
		out[st.Step] = st
	}
	return s.Run, out
}

func (b *waitBundle) wake(t *testing.T) workflow.WakeResult {
	t.Helper()
	res, err := b.wfs.Wake(b.ctx, b.st, 500)
	require.NoError(t, err)
	return res
}

func (b *waitBundle) emit(t *testing.T, schema, payload string) {
	t.Helper()
	_, err := b.em.Emit(b.ctx, wfevents.Event{Type: "order.paid", SchemaName: schema, Payload: json.RawMessage(payload)})
	require.NoError(t, err)
}

// TestWaitStepsEndToEnd: a run waits for its payment event (another
// order's event, and its own order's in another tenant, do not end the
// wait), then for its approval signal (a payload breaking the step's
// schema is refused and changes nothing), then sleeps ten minutes (the
// pass wakes it only when the clock says), skips the sleep whose time has
// passed, and creates its last task with the event's and the signal's
// payloads as inputs.
func TestWaitStepsEndToEnd(t *testing.T) {
	t.Parallel()
	b := setupWaits(t)
	id := b.start(t, "s_acme", `{"order_id": "A"}`)
	_, steps := b.steps(t, id)
	require.Equal(t, wftype.StepRunning, steps["paid"].Status)
	require.Equal(t, "order.paid", *steps["paid"].WaitEvent)
	require.WithinDuration(t, b.clk.Now().Add(time.Hour), *steps["paid"].WakeAt, time.Second)
	require.Equal(t, "waits for event order.paid until "+b.clk.Now().Add(time.Hour).UTC().Format(time.RFC3339), workflow.WaitingFor(steps["paid"]))

	b.emit(t, "s_acme", `{"order_id": "B", "amount": 1}`)  // another order
	b.emit(t, "s_other", `{"order_id": "A", "amount": 2}`) // another tenant
	b.emit(t, "s_acme", `{"amount": 3}`)                   // breaks the payload schema
	res := b.wake(t)
	require.Zero(t, res.Woken)
	_, steps = b.steps(t, id)
	require.Equal(t, wftype.StepRunning, steps["paid"].Status)

	b.emit(t, "s_acme", `{"order_id": "A", "amount": 250}`)
	require.Equal(t, 1, b.wake(t).Woken)
	_, steps = b.steps(t, id)
	require.Equal(t, wftype.StepCompleted, steps["paid"].Status)
	require.JSONEq(t, `{"order_id": "A", "amount": 250}`, string(steps["paid"].Outputs))
	require.Equal(t, wftype.StepRunning, steps["approve"].Status)
	require.Equal(t, "approve", *steps["approve"].WaitSignal)

	_, err := b.wfs.Signal(b.ctx, b.st, id, "approve", json.RawMessage(`{"approved": "yes"}`))
	var se *workflow.SignalError
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.Error(), "approved")
	_, steps = b.steps(t, id)
	require.Equal(t, wftype.StepRunning, steps["approve"].Status, "a refused signal changes nothing")
	_, err = b.wfs.Signal(b.ctx, b.st, id, "go", nil)
	require.ErrorIs(t, err, wftype.ErrNotFound)

	_, err = b.wfs.Signal(b.ctx, b.st, id, "approve", json.RawMessage(`{"approved": true, "by": "ann"}`))
	require.NoError(t, err)
	_, err = b.wfs.Signal(b.ctx, b.st, id, "approve", json.RawMessage(`{"approved": true}`))
	require.ErrorIs(t, err, wftype.ErrConflict, "the step no longer waits")
	_, steps = b.steps(t, id)
	require.Equal(t, wftype.StepCompleted, steps["approve"].Status)
	require.Equal(t, wftype.StepRunning, steps["cool_down"].Status)
	wakeAt := *steps["cool_down"].WakeAt

	res = b.wake(t)
	require.Zero(t, res.Woken)
	require.NotNil(t, res.Next)
	require.True(t, res.Next.Equal(wakeAt), "the pass knows when to come back: %s, not %s", res.Next, wakeAt)
	b.clk.Advance(9 * time.Minute)
	require.Zero(t, b.wake(t).Woken)
	b.clk.Advance(time.Minute)
	require.Equal(t, 1, b.wake(t).Woken)

	run, steps := b.steps(t, id)
	require.Equal(t, wftype.StepCompleted, steps["cool_down"].Status)
	require.JSONEq(t, `{"until": "`+wakeAt.Format(time.RFC3339Nano)+`"}`, string(steps["cool_down"].Outputs))
	require.Equal(t, wftype.StepCompleted, steps["until_ship"].Status, "a sleep until a time past ends at once")
	require.Equal(t, wftype.StepRunning, steps["ship"].Status)
	require.Equal(t, wftype.RunRunning, run.Status)
	s, err := b.wfs.Get(b.ctx, b.st, id)
	require.NoError(t, err)
	require.Len(t, s.Tasks, 1)
	var inputs map[string]any
	require.NoError(t, b.st.DB().QueryRow(b.ctx, `SELECT inputs FROM tasks.tasks WHERE task_id = $1`, s.Tasks[0].TaskID).Scan(&inputs))
	require.Equal(t, map[string]any{"by": "ann", "amount": 250.0}, inputs)
}

// TestWaitTimeouts: a payment that never comes times out TIMED_OUT after
// its hour (on_timeout: continue), and the steps after it run; an approval
// that never comes fails the run after its day, and a retry waits again.
func TestWaitTimeouts(t *testing.T) {
	t.Parallel()
	b := setupWaits(t)
	id := b.start(t, "system", `{"order_id": "A"}`)
	b.clk.Advance(time.Hour)
	require.Equal(t, 1, b.wake(t).Woken)
	run, steps := b.steps(t, id)
	require.Equal(t, wftype.StepTimedOut, steps["paid"].Status)
	require.Contains(t, *steps["paid"].Error, "timed out")
	require.Equal(t, wftype.StepRunning, steps["approve"].Status)
	require.Equal(t, wftype.RunRunning, run.Status)

	b.emit(t, "system", `{"order_id": "A"}`) // too late: the step ended
	require.Zero(t, b.wake(t).Woken)
	var left int
	require.NoError(t, b.st.DB().QueryRow(b.ctx, `SELECT count(*) FROM tasks.workflow_deliveries`).Scan(&left))
	require.Zero(t, left, "an event no step waits for is not delivered")

	b.clk.Advance(24 * time.Hour)
	require.Equal(t, 1, b.wake(t).Woken)
	run, steps = b.steps(t, id)
	require.Equal(t, wftype.RunFailed, run.Status)
	require.Contains(t, *run.Error, "step approve timed out: no signal approve came within 24h")
	require.Equal(t, wftype.StepFailed, steps["approve"].Status)
	require.Equal(t, wftype.StepCancelled, steps["cool_down"].Status, "it will not run")
	_, err := b.wfs.Signal(b.ctx, b.st, id, "approve", json.RawMessage(`{"approved": true}`))
	require.ErrorIs(t, err, wftype.ErrConflict, "a failed run takes no signal")

	_, err = b.wfs.Retry(b.ctx, b.st, id)
	require.NoError(t, err)
	_, steps = b.steps(t, id)
	require.Equal(t, wftype.StepTimedOut, steps["paid"].Status, "a retry keeps what ended")
	require.Equal(t, wftype.StepRunning, steps["approve"].Status)
	require.WithinDuration(t, b.clk.Now().Add(24*time.Hour), *steps["approve"].WakeAt, time.Second)
	_, err = b.wfs.Signal(b.ctx, b.st, id, "approve", json.RawMessage(`{"approved": false}`))
	require.NoError(t, err)
	b.clk.Advance(10 * time.Minute)
	require.Equal(t, 1, b.wake(t).Woken)
	run, steps = b.steps(t, id)
	require.Equal(t, wftype.StepSkipped, steps["ship"].Status, "ship's when tests the TIMED_OUT")
	require.Equal(t, wftype.RunCompleted, run.Status)
}

// TestCancelledRunStopsWaiting: a cancelled run's waiting step ends
// CANCELLED and leaves the wake index; the pass then finds nothing due.
func TestCancelledRunStopsWaiting(t *testing.T) {
	t.Parallel()
	b := setupWaits(t)
	id := b.start(t, "system", `{"order_id": "A"}`)
	_, err := b.wfs.Cancel(b.ctx, b.st, id)
	require.NoError(t, err)
	_, steps := b.steps(t, id)
	require.Equal(t, wftype.StepCancelled, steps["paid"].Status)
	require.Empty(t, workflow.WaitingFor(steps["paid"]))
	b.clk.Advance(2 * time.Hour)
	res := b.wake(t)
	require.Zero(t, res.Woken)
	require.Nil(t, res.Next)
	b.emit(t, "system", `{"order_id": "A"}`)
	var n int
	require.NoError(t, b.st.DB().QueryRow(b.ctx, `SELECT count(*) FROM tasks.workflow_deliveries`).Scan(&n))
	require.Zero(t, n)
	_, err = b.wfs.Signal(b.ctx, b.st, id, "approve", nil)
	require.True(t, errors.Is(err, wftype.ErrConflict))
}
