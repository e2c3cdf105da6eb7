package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// runState is one locked run while advance decides about it: its row, its
// steps' rows, and what the decisions add (tasks to create, events).
type runState struct {
	run        wftype.WorkflowRun
	wf         *spec.Workflow // nil when the specs no longer declare it
	steps      map[string]*wftype.WorkflowStep
	dirty      map[string]bool // steps whose row changed
	runChanged bool
	// failedNow: the run failed in this batch, so its PENDING tasks are
	// cancelled in the same transaction (Workflows.write).
	failedNow bool
	// refuse: a task the client refuses is the caller's error (Start and
	// Retry answer it, and nothing is written), not its step's failure
	// (the step pass of a completion: see Workflows.write).
	refuse bool
	tasks  []newTask
	// children are the child runs to start (child.go).
	children []newChild
	events   []events.Event
	now      time.Time
	env      *spec.RunEnv     // built on first use
	items    map[string][]any // for_each lists evaluated in this batch
	// kept: the outputs of the items that completed in this batch, which
	// the run keeps (store.SaveWorkflowItems, in Workflows.write): the
	// step gathers them when its last item ends, and by then retention may
	// have removed the items' tasks.
	kept []store.StepItem
}

// newTask is a step task to create.
type newTask struct {
	req   client.Request
	link  store.StepTask
	state *runState
}

// newRunState builds the state of a locked run.
func newRunState(r wftype.WorkflowRun, wf *spec.Workflow, steps []wftype.WorkflowStep, now time.Time) *runState {
	rs := &runState{run: r, wf: wf, steps: map[string]*wftype.WorkflowStep{}, dirty: map[string]bool{}, now: now,
		items: map[string][]any{}}
	for i := range steps {
		rs.steps[steps[i].Step] = &steps[i]
	}
	return rs
}

// apply records the end of a step's task.
func (rs *runState) apply(ctx context.Context, tx *store.Store, f store.FinishedStep) error {
	st := rs.steps[f.Step]
	if st == nil || st.Status != wftype.StepRunning {
		return nil // the run was cancelled or the step failed already: nothing to record
	}
	if f.Child != "" && f.Status != wftype.StatusCompleted {
		rs.childFailed(f)
		return nil
	}
	if f.Status != wftype.StatusCompleted {
		what := "its task"
		if f.Item >= 0 {
			what = fmt.Sprintf("the task of item %d", f.Item)
		}
		if f.Status == wftype.StatusCancelled {
			// Cancelled by hand (POST /tasks/{id}/cancel, wf tasks cancel):
			// the step cannot complete, so the run fails, and a retry runs
			// the step again.
			msg := fmt.Sprintf("step %s was cancelled: %s (%s) was cancelled", f.Step, what, f.TaskID)
			st.Status, st.Error = wftype.StepCancelled, &msg
			rs.dirty[f.Step] = true
			rs.end(wftype.RunFailed, &msg)
			return nil
		}
		rs.fail(f.Step, fmt.Sprintf("step %s failed: %s (%s) ended %s: %s", f.Step, what, f.TaskID, f.Status, deref(f.Error)))
		return nil
	}
	rs.dirty[f.Step] = true
	st.Done++
	if f.Item < 0 {
		st.Status, st.Outputs = wftype.StepCompleted, orNull(f.Outputs)
		rs.ended(st)
		return nil
	}
	rs.kept = append(rs.kept, store.StepItem{RunID: rs.run.ID, Step: f.Step, Item: f.Item, Outputs: f.Outputs})
	if st.Items == nil || st.Done < *st.Items {
		return nil // schedule starts the next items
	}
	outs, err := tx.WorkflowItemOutputs(ctx, rs.run, f.Step)
	if err != nil {
		return err
	}
	for _, it := range rs.kept { // this batch's, not written yet
		if it.Step == f.Step {
			outs[it.Item] = it.Outputs
		}
	}
	list := make([]json.RawMessage, *st.Items)
	for i := range list {
		list[i] = orNull(outs[i])
	}
	b, err := json.Marshal(list)
	if err != nil {
		return fmt.Errorf("error collecting the outputs of step %s: %w", f.Step, err)
	}
	st.Status, st.Outputs = wftype.StepCompleted, b
	rs.ended(st)
	return nil
}

// orNull is raw, or JSON null for none.
func orNull(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// fail ends a step as FAILED, and its run with it when the run is running.
// The message is stored as it is shown, credentials in URLs redacted
// (internal/redact), as a task's error is: it may quote a task's error or
// an expression's values, which come from the run's inputs.
func (rs *runState) fail(step, msg string) {
	msg = redact.String(msg)
	if st := rs.steps[step]; st != nil {
		st.Status, st.Error = wftype.StepFailed, &msg
		rs.dirty[step] = true
	}
	rs.end(wftype.RunFailed, &msg)
}

// end ends a running run with status, and its event.
func (rs *runState) end(status wftype.RunStatus, msg *string) {
	if rs.run.Status != wftype.RunRunning {
		return
	}
	rs.run.Status, rs.run.Error, rs.runChanged = status, msg, true
	rs.failedNow = status == wftype.RunFailed
	at := rs.now
	rs.run.FinishedAt = &at
	rs.events = append(rs.events, runEvent(rs.run))
}

// cancel ends a running run as CANCELLED (Workflows.Cancel): its steps
// that did not end become CANCELLED, so a retry runs them again; the
// caller cancels their tasks, running ones included, once this commits.
func (rs *runState) cancel(msg string) {
	for name, s := range rs.steps {
		if !s.Status.Ended() {
			s.Status, s.Error = wftype.StepCancelled, &msg
			rs.dirty[name] = true
		}
	}
	rs.end(wftype.RunCancelled, &msg)
}

// afterFailure ends the steps of a run that failed which can no longer
// complete: the waiting ones (they will not run: a run's page showed them
// WAITING, as if they might), those one of whose tasks was just cancelled
// (cancelled names them) and the for_each steps with items not started. A
// running step whose tasks all run on stays RUNNING: their outcomes are
// recorded when they end (a completed step keeps its outputs for a retry),
// but they do not revive the run. A retry runs every cancelled step again.
func (rs *runState) afterFailure(cancelled map[string]bool, msg string) {
	for name, s := range rs.steps {
		if s.Status == wftype.StepWaiting {
			notRun := fmt.Sprintf("step %s did not run: workflow run %s failed", name, rs.run.ID)
			s.Status, s.Error = wftype.StepCancelled, &notRun
			rs.dirty[name] = true
			continue
		}
		if s.Status != wftype.StepRunning {
			continue
		}
		if cancelled[name] || (s.Items != nil && s.Started < *s.Items) || waiting(s) {
			s.Status, s.Error = wftype.StepCancelled, &msg
			rs.dirty[name] = true
		}
	}
}

// schedule starts what the run's state allows: the steps whose upstream
// steps all ended (or skips them), the next items of for_each steps; then
// completes the run when every step ended well.
func (rs *runState) schedule() {
	if rs.run.Status != wftype.RunRunning {
		return
	}
	if rs.wf == nil {
		msg := fmt.Sprintf("workflow %s is no longer declared by the specs, so the run cannot go on", rs.run.Workflow)
		rs.end(wftype.RunFailed, &msg)
		return
	}
	for _, step := range rs.wf.Steps() {
		if rs.run.Status != wftype.RunRunning {
			return
		}
		st := rs.steps[step.Name()]
		if st == nil { // a step added to the spec after the run started
			st = &wftype.WorkflowStep{RunID: rs.run.ID, Step: step.Name(), Status: wftype.StepWaiting}
			rs.steps[step.Name()] = st
		}
		switch st.Status {
		case wftype.StepWaiting:
			rs.startStep(step, st)
		case wftype.StepRunning:
			if step.IsForEach() {
				rs.topUp(step, st)
			}
		}
	}
	for _, st := range rs.steps {
		if st.Status != wftype.StepCompleted && st.Status != wftype.StepSkipped && st.Status != wftype.StepTimedOut {
			return
		}
	}
	rs.complete()
}

// startStep starts, skips or leaves waiting a WAITING step.
func (rs *runState) startStep(step *spec.Step, st *wftype.WorkflowStep) {
	skippedUp := false
	for _, dep := range step.DependsOn() {
		d := rs.steps[dep]
		if d == nil {
			return
		}
		switch d.Status {
		case wftype.StepCompleted, wftype.StepTimedOut:
		case wftype.StepSkipped:
			skippedUp = true
		default:
			return // still waiting (or failed: the run failed with it)
		}
	}
	if skippedUp && step.OnUpstreamSkipped() == spec.OnSkippedSkip {
		rs.skip(st)
		return
	}
	env := rs.environment()
	ready, err := step.Ready(*env)
	if err != nil {
		rs.fail(step.Name(), err.Error())
		return
	}
	if !ready {
		rs.skip(st)
		return
	}
	rs.dirty[st.Step] = true
	st.Status, st.Started, st.Done, st.Error, st.Outputs = wftype.StepRunning, 0, 0, nil, nil
	if step.Wait() != nil {
		rs.startWait(step, st)
		return
	}
	if !step.IsForEach() {
		st.Items = nil
		rs.startTask(step, st, nil, -1)
		return
	}
	items, err := rs.itemsOf(step)
	if err != nil {
		rs.fail(step.Name(), err.Error())
		return
	}
	n := len(items)
	st.Items = &n
	if n == 0 {
		st.Status, st.Outputs = wftype.StepCompleted, json.RawMessage("[]")
		rs.ended(st)
		return
	}
	rs.topUp(step, st)
}

// topUp starts the next items of a running for_each step, up to its
// concurrency.
func (rs *runState) topUp(step *spec.Step, st *wftype.WorkflowStep) {
	if st.Items == nil || st.Started >= *st.Items || st.Started-st.Done >= step.Concurrency() {
		return
	}
	items, err := rs.itemsOf(step)
	if err != nil {
		rs.fail(step.Name(), err.Error())
		return
	}
	if len(items) != *st.Items {
		rs.fail(step.Name(), fmt.Sprintf("step %s: its for_each list changed from %d to %d items", step.Name(), *st.Items, len(items)))
		return
	}
	for st.Started < *st.Items && st.Started-st.Done < step.Concurrency() && rs.run.Status == wftype.RunRunning {
		rs.startTask(step, st, items[st.Started], st.Started)
	}
}

// itemsOf evaluates a for_each step's list, once per batch.
func (rs *runState) itemsOf(step *spec.Step) ([]any, error) {
	if items, ok := rs.items[step.Name()]; ok {
		return items, nil
	}
	items, err := step.Items(*rs.environment())
	if err != nil {
		return nil, err
	}
	rs.items[step.Name()] = items
	return items, nil
}

// startTask adds the task of a step (item index for a for_each step, -1
// otherwise) to what the batch creates.
func (rs *runState) startTask(step *spec.Step, st *wftype.WorkflowStep, item any, index int) {
	inputs, err := step.Inputs(*rs.environment(), item, index)
	if err != nil {
		rs.fail(step.Name(), err.Error())
		return
	}
	if step.Child() != nil {
		rs.startChild(step, st, inputs, index)
		return
	}
	prio := step.Priority()
	retries := step.MaxRetries()
	rs.tasks = append(rs.tasks, newTask{
		req: client.Request{
			TaskType: step.TaskType().Name(), SchemaName: rs.run.SchemaName, Inputs: inputs,
			Priority: &prio, MaxRetries: &retries,
		},
		link:  store.StepTask{RunID: rs.run.ID, Step: step.Name(), Item: index},
		state: rs,
	})
	st.Started++
	rs.dirty[st.Step] = true
}

// skip ends a step as SKIPPED.
func (rs *runState) skip(st *wftype.WorkflowStep) {
	st.Status, st.Outputs = wftype.StepSkipped, nil
	rs.dirty[st.Step] = true
	rs.ended(st)
}

// ended makes a step that ended visible to the expressions of the steps
// scheduled after it in this batch.
func (rs *runState) ended(st *wftype.WorkflowStep) {
	if rs.env == nil {
		return // built from the rows on first use
	}
	rs.env.Steps[st.Step] = stepState(st)
}

// environment is what the run's expressions see: its inputs and the
// outputs of its steps that ended.
func (rs *runState) environment() *spec.RunEnv {
	if rs.env != nil {
		return rs.env
	}
	env := &spec.RunEnv{RunID: rs.run.ID.String(), SchemaName: rs.run.SchemaName, Steps: map[string]spec.StepState{}}
	_ = json.Unmarshal(rs.run.Inputs, &env.Inputs) // checked against the schema at start
	for _, st := range rs.steps {
		if st.Status == wftype.StepCompleted || st.Status == wftype.StepSkipped || st.Status == wftype.StepTimedOut {
			env.Steps[st.Step] = stepState(st)
		}
	}
	rs.env = env
	return env
}

// stepState is what expressions see of a step that ended.
func stepState(st *wftype.WorkflowStep) spec.StepState {
	s := spec.StepState{Status: string(st.Status)}
	if len(st.Outputs) > 0 {
		_ = json.Unmarshal(st.Outputs, &s.Outputs) // written by wf as JSON
	}
	return s
}
