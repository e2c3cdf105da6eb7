package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// Child runs: a `workflow:` step starts a run of another workflow (one per
// item for a for_each step) instead of a task, and completes with the
// child's outputs when the child completes, or fails when it fails or is
// cancelled.
//
// The child is created in the transaction that starts its step, after the
// parent's rows are written (writeChildren), and its first steps with it.
// When a run with a parent ends, whatever ends it (its last step, a
// failure, a cancel, its timeout), the transaction that writes its end
// locks the parent and advances it with the child's end as it would with a
// task's (advanceParents): no parent waits by polling, and a crash loses
// neither end nor creates a child twice. Locks on runs are therefore taken
// child before parent; a parent that ends never locks its running children
// in its own transaction: they are cancelled after it commits (Cancel,
// failEach) or, after a crash or when a step's failure ended the parent,
// by the step pass (CancelOrphans).

// newChild is a child run to start.
type newChild struct {
	wf     *spec.Workflow
	inputs json.RawMessage
	link   store.StepTask // the parent's run, step and item (-1: none)
	state  *runState
}

// startChild adds the child run of a step (item index for a for_each
// step, -1 otherwise) to what the batch creates; its inputs were checked
// against the child workflow's inputs schema (spec.Step.Inputs).
func (rs *runState) startChild(step *spec.Step, st *wftype.WorkflowStep, inputs json.RawMessage, index int) {
	rs.children = append(rs.children, newChild{
		wf: step.Child(), inputs: inputs, state: rs,
		link: store.StepTask{RunID: rs.run.ID, Step: step.Name(), Item: index},
	})
	st.Started++
	rs.dirty[st.Step] = true
}

// childFailed fails the step of a child run that ended FAILED or
// CANCELLED, and so the run.
func (rs *runState) childFailed(f store.FinishedStep) {
	what := "its child run"
	if f.Item >= 0 {
		what = fmt.Sprintf("the child run of item %d", f.Item)
	}
	rs.fail(f.Step, fmt.Sprintf("step %s failed: %s %s (workflow %s) ended %s: %s", f.Step, what, f.TaskID, f.Child, f.Status, deref(f.Error)))
}

// complete ends a run whose steps all ended well as COMPLETED, with its
// workflow's outputs; a run whose outputs cannot be evaluated fails.
func (rs *runState) complete() {
	if rs.wf != nil {
		out, err := rs.wf.RunOutputs(*rs.environment())
		if err != nil {
			msg := err.Error()
			rs.end(wftype.RunFailed, &msg)
			return
		}
		rs.run.Outputs = out
	}
	rs.end(wftype.RunCompleted, nil)
}

// writeChildren, the last part of write, starts the child runs the runs'
// states call for (each with its first steps, in tx) and advances the
// parents of the runs that ended in this batch.
func (w *Workflows) writeChildren(ctx context.Context, tx *store.Store, states []*runState) error {
	var ids []uuid.UUID
	refuse := false
	for _, rs := range states {
		for _, c := range rs.children {
			id, _, err := store.NewID()
			if err != nil {
				return err
			}
			names := make([]string, 0, len(c.wf.Steps()))
			for _, s := range c.wf.Steps() {
				names = append(names, s.Name())
			}
			parent := c.link.RunID
			if _, err := tx.InsertWorkflowRun(ctx, store.NewWorkflowRun{
				ID: id, Workflow: c.wf.Name(), SchemaName: rs.run.SchemaName, Inputs: c.inputs, Timeout: c.wf.Timeout(),
				Steps: names, Now: w.cfg.Clock.DBNow(), ParentRunID: &parent, ParentStep: c.link.Step, ParentItem: c.link.Item,
			}); err != nil {
				return fmt.Errorf("error starting the child run of step %s: %w", c.link.Step, err)
			}
			ids = append(ids, id)
			refuse = refuse || rs.refuse
		}
	}
	if len(ids) > 0 {
		if err := w.advance(ctx, tx, ids, nil, refuse, nil); err != nil {
			return err
		}
	}
	return w.advanceParents(ctx, tx, states)
}

// advanceParents advances, in tx, the parents of the runs among states
// that ended in this batch, with each child's end as its step's outcome.
func (w *Workflows) advanceParents(ctx context.Context, tx *store.Store, states []*runState) error {
	byRun := map[uuid.UUID][]store.FinishedStep{}
	var ids []uuid.UUID
	for _, rs := range states {
		r := rs.run
		if !rs.runChanged || r.Status == wftype.RunRunning || r.ParentRunID == nil {
			continue
		}
		f := store.FinishedStep{
			TaskID: r.ID, RunID: *r.ParentRunID, Step: r.ParentStep, Item: r.ParentItem, Child: r.Workflow,
			Status: childStatus(r.Status), Outputs: r.Outputs, Error: r.Error,
		}
		if _, seen := byRun[f.RunID]; !seen {
			ids = append(ids, f.RunID)
		}
		byRun[f.RunID] = append(byRun[f.RunID], f)
	}
	if len(ids) == 0 {
		return nil
	}
	return w.advance(ctx, tx, ids, byRun, false, nil)
}

// childStatus is the task status a child run's end counts as for its
// parent's step.
func childStatus(s wftype.RunStatus) wftype.TaskStatus {
	switch s {
	case wftype.RunCompleted:
		return wftype.StatusCompleted
	case wftype.RunCancelled:
		return wftype.StatusCancelled
	}
	return wftype.StatusFailed
}

// cancelChildren cancels the RUNNING child runs of run parent (and,
// through Cancel, theirs and their tasks), each in a transaction of its
// own: called once the parent's end committed. A child that ended
// meanwhile is left. It returns how many it cancelled.
func (w *Workflows) cancelChildren(ctx context.Context, st *store.Store, parent uuid.UUID) (int, error) {
	ids, err := st.RunningChildRuns(ctx, parent)
	if err != nil {
		return 0, err
	}
	return w.cancelRuns(ctx, st, ids)
}

// cancelRuns cancels each RUNNING run among ids, leaving those that ended
// meanwhile.
func (w *Workflows) cancelRuns(ctx context.Context, st *store.Store, ids []uuid.UUID) (int, error) {
	n := 0
	for _, id := range ids {
		if _, err := w.Cancel(ctx, st, id); err != nil {
			if errors.Is(err, wftype.ErrConflict) || errors.Is(err, wftype.ErrNotFound) {
				continue // it ended meanwhile
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// CancelOrphans cancels up to limit RUNNING child runs whose parent is no
// longer RUNNING: those a crash left between the parent's end and its
// children's cancel, and those of parents that failed (a step's failure
// ends a run in the transaction of that step's end, which does not lock
// the run's children). The step pass calls it. It returns how many it
// cancelled.
func (w *Workflows) CancelOrphans(ctx context.Context, st *store.Store, limit int) (int, error) {
	ids, err := st.RunningChildrenOfEndedRuns(ctx, limit)
	if err != nil {
		return 0, err
	}
	n, err := w.cancelRuns(ctx, st, ids)
	if err != nil {
		return n, fmt.Errorf("error cancelling the child runs of ended workflow runs: %w", err)
	}
	return n, nil
}
