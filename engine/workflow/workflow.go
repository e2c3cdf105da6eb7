// Package workflow runs Workflow specs on the tasks table: a run is a row of
// tasks.workflow_runs, its steps are ordinary tasks carrying the run's id.
//
// Every decision about a run is taken in one place, advance, with the run's
// row locked: Start creates the run and its first steps in one
// transaction; Advance, the store's step hook, runs inside the transaction
// that finishes a batch of step tasks (engine/store FinishTasks), so a
// step's completion, the tasks of the steps it unblocks and the run's end
// commit together or not at all. A crash can therefore neither lose a step
// (the completion rolls back with it, and the task runs again) nor create
// one twice (the run's row serialises the completions of its steps, so a
// fan-in step is created by exactly one of them).
package workflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// Event types a run emits when it ends.
const (
	EventCompleted = "workflow.completed"
	EventFailed    = "workflow.failed"
	EventCancelled = "workflow.cancelled"
)

// ErrUnknownWorkflow is returned for a workflow no spec declares.
var ErrUnknownWorkflow = errors.New("unknown workflow")

// Config configures Workflows.
type Config struct {
	// Specs are the compiled specs. Required.
	Specs *spec.Set
	// Client creates the steps' tasks (checked against their task types,
	// with their dedup keys, files and tracing). Required.
	Client *client.Client
	// Emitter writes the workflow.* events. Required.
	Emitter *events.Emitter
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Workflows starts, advances, cancels and retries workflow runs.
type Workflows struct {
	cfg Config
}

// New checks cfg and returns the runtime of its workflows.
func New(cfg Config) (*Workflows, error) {
	if cfg.Specs == nil || cfg.Client == nil || cfg.Emitter == nil {
		return nil, errors.New("error creating the workflow runtime: Specs, Client and Emitter are required")
	}
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Workflows{cfg: cfg}, nil
}

// StartRequest is a run to start.
type StartRequest struct {
	Workflow string
	// SchemaName is the tenant the run and its steps belong to; default
	// "system".
	SchemaName string
	// Inputs is a JSON object; default {}.
	Inputs json.RawMessage
}

// InputError is a run's inputs breaking its workflow's inputs schema.
type InputError struct {
	Workflow string
	Inputs   spec.InputErrors
	// Message is set for a problem that is not about one input.
	Message string
}

// Error implements error.
func (e *InputError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("invalid run of workflow %s: %s", e.Workflow, e.Message)
	}
	return fmt.Sprintf("invalid inputs for workflow %s: %s", e.Workflow, e.Inputs.Error())
}

// checkStart finds a run's workflow and checks its inputs (default {}),
// which it returns as JSON.
func (w *Workflows) checkStart(req StartRequest) (*spec.Workflow, json.RawMessage, error) {
	wf, ok := w.cfg.Specs.Workflow(req.Workflow)
	if !ok {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownWorkflow, req.Workflow)
	}
	raw := req.Inputs
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	var inputs any
	if err := json.Unmarshal(raw, &inputs); err != nil {
		return nil, nil, &InputError{Workflow: wf.Name(), Message: "inputs are not valid JSON: " + err.Error()}
	}
	if err := wf.ValidateInputs(inputs); err != nil {
		var ie spec.InputErrors
		if errors.As(err, &ie) {
			return nil, nil, &InputError{Workflow: wf.Name(), Inputs: ie}
		}
		return nil, nil, &InputError{Workflow: wf.Name(), Message: err.Error()}
	}
	return wf, raw, nil
}

// Start creates a run and the tasks of its first steps in one transaction.
func (w *Workflows) Start(ctx context.Context, st *store.Store, req StartRequest) (wftype.WorkflowRun, error) {
	wf, raw, err := w.checkStart(req)
	if err != nil {
		return wftype.WorkflowRun{}, err
	}
	schema := cmp.Or(req.SchemaName, wftype.SystemSchema)
	id, _, err := store.NewID()
	if err != nil {
		return wftype.WorkflowRun{}, err
	}
	names := make([]string, 0, len(wf.Steps()))
	for _, s := range wf.Steps() {
		names = append(names, s.Name())
	}
	var run wftype.WorkflowRun
	err = st.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.InsertWorkflowRun(ctx, store.NewWorkflowRun{
			ID: id, Workflow: wf.Name(), SchemaName: schema, Inputs: raw, Timeout: wf.Timeout(), Steps: names,
			Now: w.cfg.Clock.DBNow(),
		}); err != nil {
			return err
		}
		return w.advance(ctx, tx, []uuid.UUID{id}, nil, true, func(r wftype.WorkflowRun) { run = r })
	})
	if err != nil {
		return wftype.WorkflowRun{}, fmt.Errorf("error starting a run of workflow %s: %w", wf.Name(), err)
	}
	return run, nil
}

// Advance is the store's step hook (store.WithStepHook): inside the
// transaction that ended the tasks of steps, it records each step's
// outcome, creates the tasks of the steps that are now unblocked (or the
// next items of a for_each step) and ends the runs that are done. The
// steps of runs of workflows the specs do not declare are recorded for the
// step pass of an instance that does (Sweep).
func (w *Workflows) Advance(ctx context.Context, tx *store.Store, finished []store.FinishedStep) error {
	byRun := map[uuid.UUID][]store.FinishedStep{}
	var ids []uuid.UUID
	for _, f := range finished {
		if _, seen := byRun[f.RunID]; !seen {
			ids = append(ids, f.RunID)
		}
		byRun[f.RunID] = append(byRun[f.RunID], f)
	}
	return w.advance(ctx, tx, ids, byRun, false, nil)
}

// Names lists the workflows the specs declare.
func (w *Workflows) Names() []string {
	names := []string{}
	for _, wf := range w.cfg.Specs.Workflows() {
		names = append(names, wf.Name())
	}
	return names
}

// Sweep is the step pass of the runs of the workflows the specs declare:
// it advances them from the step tasks that ended where they could not be
// (recorded by store.RecordStepEnds: an instance whose specs do not declare
// the workflow, a remote worker through such an API, `wf exec`), taking at
// most limit task ends per transaction, until none is left. Each batch is
// taken, applied and deleted in one transaction, so an end is applied
// exactly once; instances sweeping at once take different ends (SKIP
// LOCKED). It returns how many task ends it applied.
func (w *Workflows) Sweep(ctx context.Context, st *store.Store, limit int) (int, error) {
	names := w.Names()
	if len(names) == 0 {
		return 0, nil
	}
	// The child runs of runs that ended are cancelled here too (child.go).
	total, err := w.CancelOrphans(ctx, st, limit)
	if err != nil {
		return total, err
	}
	for {
		n := 0
		err := st.InTx(ctx, func(tx *store.Store) error {
			ends, err := tx.TakeStepEnds(ctx, names, limit)
			if err != nil || len(ends) == 0 {
				return err
			}
			n = len(ends)
			return w.Advance(ctx, tx, ends)
		})
		if err != nil {
			return total, fmt.Errorf("error advancing workflow runs from step tasks that ended elsewhere: %w", err)
		}
		total += n
		if n < limit {
			return total, nil
		}
	}
}

// advance locks the runs ids, applies the finished steps of each, schedules
// what they unblock and writes the result; refuse makes a task the client
// refuses an error rather than its step's failure (runState.refuse); seen,
// when set, is told each run as it ends up.
func (w *Workflows) advance(ctx context.Context, tx *store.Store, ids []uuid.UUID, finished map[uuid.UUID][]store.FinishedStep,
	refuse bool, seen func(wftype.WorkflowRun)) error {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	runs, steps, err := tx.LockWorkflowRuns(ctx, ids)
	if err != nil {
		return err
	}
	stepsOf := map[uuid.UUID][]wftype.WorkflowStep{}
	for _, s := range steps {
		stepsOf[s.RunID] = append(stepsOf[s.RunID], s)
	}
	var states []*runState
	var elsewhere []store.FinishedStep
	for _, r := range runs {
		wf, ok := w.cfg.Specs.Workflow(r.Workflow)
		if !ok {
			// A run of a workflow these specs do not declare: another
			// instance's (or one removed from the specs). Its step ends are
			// recorded for a step pass of an instance that declares it
			// (Sweep); this one cannot tell what comes next.
			elsewhere = append(elsewhere, finished[r.ID]...)
			continue
		}
		rs := newRunState(r, wf, stepsOf[r.ID], w.cfg.Clock.Now())
		rs.refuse = refuse
		for _, f := range finished[r.ID] {
			if err := rs.apply(ctx, tx, f); err != nil {
				return err
			}
		}
		rs.schedule()
		states = append(states, rs)
	}
	if err := tx.RecordStepEnds(ctx, elsewhere); err != nil {
		return err
	}
	if err := w.write(ctx, tx, states); err != nil {
		return err
	}
	if seen != nil {
		for _, rs := range states {
			seen(rs.run)
		}
	}
	return nil
}

// write creates the tasks the runs' states call for, then saves the
// outputs of the items that completed, the steps and runs that changed and
// emits the events of the runs that ended, all in tx. A task that the client refuses (its checks of files and dedup key,
// which depend on values only known now) or that its task type's dedup key
// refuses (a live task holds the key) fails its step, and so its run,
// rather than the transaction: the transaction also ends the tasks of the
// steps that unblocked it, and would be refused again each time it was
// retried. The tasks created for other steps of that run are cancelled
// (cancelPending). Start and Retry (runState.refuse) answer such a refusal
// instead, as an error, and write nothing.
func (w *Workflows) write(ctx context.Context, tx *store.Store, states []*runState) error {
	var tasks []newTask
	for _, rs := range states {
		for _, t := range rs.tasks {
			if err := w.cfg.Client.Check(t.req); err != nil {
				if rs.refuse {
					return fmt.Errorf("error creating step tasks: %w", err)
				}
				t.state.fail(t.link.Step, fmt.Sprintf("the task of step %s was not created: %v", t.link.Step, err))
				continue
			}
			tasks = append(tasks, t)
		}
	}
	if len(tasks) > 0 {
		reqs := make([]client.Request, len(tasks))
		for i, t := range tasks {
			reqs[i] = t.req
		}
		results, err := w.cfg.Client.EnqueueManyIn(ctx, tx, reqs)
		if err != nil {
			return fmt.Errorf("error creating step tasks: %w", err)
		}
		links := make([]store.StepTask, 0, len(results))
		for i, r := range results {
			t := tasks[i]
			if r.Duplicate {
				t.state.fail(t.link.Step, fmt.Sprintf("the task of step %s was not created: the live task %s holds its dedup key %q",
					t.link.Step, r.Task.ID, deref(r.Task.DedupKey)))
				continue
			}
			l := t.link
			l.TaskID = r.Task.ID
			links = append(links, l)
		}
		if err := tx.LinkStepTasks(ctx, links); err != nil {
			return err
		}
	}
	for _, rs := range states {
		if rs.failedNow {
			if err := w.cancelPending(ctx, tx, rs); err != nil {
				return err
			}
		}
	}
	var steps []wftype.WorkflowStep
	var runs []wftype.WorkflowRun
	var evs []events.Event
	var items []store.StepItem
	for _, rs := range states {
		items = append(items, rs.kept...)
		if rs.runChanged {
			runs = append(runs, rs.run)
		}
		for _, name := range slices.Sorted(maps.Keys(rs.dirty)) {
			steps = append(steps, *rs.steps[name])
		}
		evs = append(evs, rs.events...)
	}
	if err := tx.SaveWorkflowItems(ctx, items); err != nil {
		return err
	}
	now := w.cfg.Clock.DBNow()
	if err := tx.SaveWorkflowSteps(ctx, steps, now); err != nil {
		return err
	}
	for _, r := range runs {
		if err := tx.SaveWorkflowRun(ctx, r, now); err != nil {
			return err
		}
	}
	for _, ev := range evs {
		if _, err := w.cfg.Emitter.EmitIn(ctx, tx, ev); err != nil {
			return err
		}
	}
	return w.writeChildren(ctx, tx, states)
}

// cancelPending cancels the PENDING tasks of a run that failed in this
// batch (fan-out items not started, steps created but not started: the
// tasks this batch created included), in tx, and ends the steps that can
// therefore no longer complete. Its ACTIVE tasks are left to finish.
func (w *Workflows) cancelPending(ctx context.Context, tx *store.Store, rs *runState) error {
	msg := fmt.Sprintf("cancelled: workflow run %s failed", rs.run.ID)
	cancelled, err := tx.CancelPendingWorkflowTasks(ctx, rs.run, msg, w.cfg.Clock.DBNow())
	if err != nil {
		return err
	}
	steps := map[string]bool{}
	for _, c := range cancelled {
		steps[c.Step] = true
	}
	rs.afterFailure(steps, msg)
	return nil
}

// runEvent is the event of a run that ended.
func runEvent(r wftype.WorkflowRun) events.Event {
	typ := EventCompleted
	switch r.Status {
	case wftype.RunFailed:
		typ = EventFailed
	case wftype.RunCancelled:
		typ = EventCancelled
	}
	scope := "CATALOG"
	if r.SchemaName == wftype.SystemSchema {
		scope = "PLATFORM"
	}
	fields := map[string]any{
		"run_id": r.ID.String(), "workflow": r.Workflow, "status": r.Status, "error": r.Error, "attempt": r.Attempt,
	}
	if r.ParentRunID != nil { // a child run: the run whose step started it
		fields["parent_run_id"], fields["parent_step"] = r.ParentRunID.String(), r.ParentStep
	}
	payload, _ := json.Marshal(fields) // strings and a pointer always encode
	// Every subscriber and webhook receiver sees the event: no credentials.
	return events.Event{Type: typ, Scope: scope, SchemaName: r.SchemaName, Payload: redact.JSON(payload)}
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// timeoutMessage is the error of a run that ran past its deadline.
func timeoutMessage(wf *spec.Workflow, deadline time.Time) string {
	return fmt.Sprintf("the run timed out: it did not end within the workflow's timeout (%s, deadline %s)",
		spec.FormatDuration(wf.Timeout()), deadline.UTC().Format(time.RFC3339))
}
