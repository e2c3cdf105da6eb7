package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// Status is a run with every step and every task of its steps.
type Status struct {
	Run   wftype.WorkflowRun
	Steps []wftype.WorkflowStep // in the workflow's order (topological), then steps it no longer declares
	Tasks []store.WorkflowTask  // oldest first
	// Children are the runs its child workflow steps started, oldest first.
	Children []wftype.WorkflowRun
}

// Get reads a run's status; wftype.ErrNotFound when there is no such run.
func (w *Workflows) Get(ctx context.Context, st *store.Store, id uuid.UUID) (Status, error) {
	run, err := st.GetWorkflowRun(ctx, id)
	if err != nil {
		return Status{}, err
	}
	steps, err := st.WorkflowSteps(ctx, id)
	if err != nil {
		return Status{}, err
	}
	tasks, err := st.WorkflowRunTasks(ctx, run)
	if err != nil {
		return Status{}, err
	}
	children, err := st.ChildWorkflowRuns(ctx, id)
	if err != nil {
		return Status{}, err
	}
	return Status{Run: run, Steps: w.ordered(run.Workflow, steps), Tasks: tasks, Children: children}, nil
}

// ordered sorts a run's steps in its workflow's order.
func (w *Workflows) ordered(workflow string, steps []wftype.WorkflowStep) []wftype.WorkflowStep {
	wf, ok := w.cfg.Specs.Workflow(workflow)
	if !ok {
		return steps
	}
	byName := map[string]wftype.WorkflowStep{}
	for _, s := range steps {
		byName[s.Step] = s
	}
	out := make([]wftype.WorkflowStep, 0, len(steps))
	for _, s := range wf.Steps() {
		if row, ok := byName[s.Name()]; ok {
			out = append(out, row)
			delete(byName, s.Name())
		}
	}
	for _, s := range steps {
		if _, left := byName[s.Step]; left {
			out = append(out, s)
		}
	}
	return out
}

// Cancel cancels a RUNNING run: the run and its unfinished steps become
// CANCELLED (and workflow.cancelled is emitted) in one transaction, so no
// step is created after it; then its PENDING tasks are cancelled, its
// running ones told to stop, and its running child runs cancelled. A run in another status gives
// wftype.ErrConflict.
func (w *Workflows) Cancel(ctx context.Context, st *store.Store, id uuid.UUID) (wftype.WorkflowRun, error) {
	run, err := w.change(ctx, st, id, "cancelling", func(_ *store.Store, r wftype.WorkflowRun, steps []wftype.WorkflowStep) (*runState, error) {
		if r.Status != wftype.RunRunning {
			return nil, fmt.Errorf("workflow run %s is %s, not RUNNING: %w", id, r.Status, wftype.ErrConflict)
		}
		rs := newRunState(r, nil, steps, w.cfg.Clock.Now())
		rs.cancel("cancelled")
		return rs, nil
	})
	if err != nil {
		return run, err
	}
	// After the commit no task of the run can be created any more, so this
	// sees every one that is still to stop.
	if _, err := st.CancelWorkflowTasks(ctx, run); err != nil {
		return run, fmt.Errorf("error cancelling the tasks of workflow run %s: %w", id, err)
	}
	// Its child runs, and theirs, with their tasks (child.go).
	if _, err := w.cancelChildren(ctx, st, id); err != nil {
		return run, fmt.Errorf("error cancelling the child runs of workflow run %s: %w", id, err)
	}
	return run, nil
}

// change changes run id in one transaction: it locks the run and its steps
// (a run that does not exist gives wftype.ErrNotFound), lets fn decide the
// run's new state, and writes it; doing names the change in errors.
func (w *Workflows) change(ctx context.Context, st *store.Store, id uuid.UUID, doing string,
	fn func(tx *store.Store, r wftype.WorkflowRun, steps []wftype.WorkflowStep) (*runState, error)) (wftype.WorkflowRun, error) {
	var run wftype.WorkflowRun
	err := st.InTx(ctx, func(tx *store.Store) error {
		runs, steps, err := tx.LockWorkflowRuns(ctx, []uuid.UUID{id})
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			return fmt.Errorf("workflow run %s: %w", id, wftype.ErrNotFound)
		}
		rs, err := fn(tx, runs[0], steps)
		if err != nil {
			return err
		}
		run = rs.run
		return w.write(ctx, tx, []*runState{rs})
	})
	if err != nil {
		return wftype.WorkflowRun{}, fmt.Errorf("error %s workflow run %s: %w", doing, id, err)
	}
	return run, nil
}

// Retry runs a FAILED or CANCELLED run again from the steps that did not
// complete: its FAILED and CANCELLED steps wait again (and start at once
// when their upstream steps completed), COMPLETED and SKIPPED steps keep
// their outputs, and the run gets a new deadline. A run in another status
// gives wftype.ErrConflict.
func (w *Workflows) Retry(ctx context.Context, st *store.Store, id uuid.UUID) (wftype.WorkflowRun, error) {
	return w.change(ctx, st, id, "retrying", func(tx *store.Store, r wftype.WorkflowRun, steps []wftype.WorkflowStep) (*runState, error) {
		if r.Status != wftype.RunFailed && r.Status != wftype.RunCancelled {
			return nil, fmt.Errorf("workflow run %s is %s; only a FAILED or CANCELLED run can be retried: %w", id, r.Status, wftype.ErrConflict)
		}
		wf, ok := w.cfg.Specs.Workflow(r.Workflow)
		if !ok {
			return nil, fmt.Errorf("%w %q: the specs no longer declare it", ErrUnknownWorkflow, r.Workflow)
		}
		// A task of the last attempt that has not ended would, when it
		// ends, be taken for the new attempt's (and fail it, or count as
		// one of its items): the run is retried only once they all ended.
		tasks, err := tx.WorkflowRunTasks(ctx, r)
		if err != nil {
			return nil, err
		}
		for _, t := range tasks {
			if t.Status == wftype.StatusPending || t.Status == wftype.StatusActive {
				return nil, fmt.Errorf("workflow run %s still has task %s (step %s) %s from its last attempt; retry once it ends: %w",
					id, t.TaskID, t.Step, t.Status, wftype.ErrConflict)
			}
		}
		if children, err := tx.RunningChildRuns(ctx, id); err != nil || len(children) > 0 {
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("workflow run %s still has child run %s RUNNING from its last attempt; retry once it ends: %w",
				id, children[0], wftype.ErrConflict)
		}
		now := w.cfg.Clock.Now()
		// The ends of the last attempt's tasks that no step pass applied
		// yet (recorded by an instance that does not declare the workflow,
		// or by a cancel outside wf run) are applied now, to the run as it
		// stands: taken later by a step pass, one would count for the new
		// attempt (a cancelled task of the last attempt failing it).
		ends, err := tx.TakeRunStepEnds(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		last := newRunState(r, wf, steps, now)
		for _, f := range ends {
			if err := last.apply(ctx, tx, f); err != nil {
				return nil, err
			}
		}
		r.Status, r.Error, r.FinishedAt, r.Attempt = wftype.RunRunning, nil, nil, r.Attempt+1
		r.Deadline = now.Add(wf.Timeout())
		rs := newRunState(r, wf, steps, now)
		rs.runChanged, rs.refuse = true, true
		for name := range last.dirty {
			rs.dirty[name] = true // a step the last attempt's ends completed keeps its outputs
		}
		for name, s := range rs.steps {
			// A step left RUNNING when the run failed has no live task any
			// more (checked above), so it is run again as well.
			if s.Status == wftype.StepFailed || s.Status == wftype.StepCancelled || s.Status == wftype.StepRunning {
				s.Status, s.Items, s.Started, s.Done, s.Outputs, s.Error = wftype.StepWaiting, nil, 0, 0, nil, nil
				s.WakeAt, s.WaitEvent, s.WaitSignal = nil, nil, nil
				rs.dirty[name] = true
			}
		}
		rs.schedule()
		return rs, nil
	})
}

// Expire fails the RUNNING runs whose deadline passed (up to limit), each
// in a transaction of its own that also cancels the run's PENDING tasks, as
// any failure of a run does (its ACTIVE ones are left to finish). It returns
// how many it failed.
func (w *Workflows) Expire(ctx context.Context, st *store.Store, limit int) (int, error) {
	ids, err := st.ExpiredWorkflowRuns(ctx, w.cfg.Clock.DBNow(), limit)
	if err != nil {
		return 0, err
	}
	return w.failEach(ctx, st, ids, "expiring", func(_ *store.Store, r wftype.WorkflowRun, now time.Time) (string, error) {
		if !now.After(r.Deadline) {
			return "", nil // retried meanwhile
		}
		if wf, ok := w.cfg.Specs.Workflow(r.Workflow); ok {
			return timeoutMessage(wf, r.Deadline), nil
		}
		return "the run timed out: it did not end by its deadline, " + r.Deadline.UTC().Format(time.RFC3339), nil
	})
}

// FailUndeclared fails the RUNNING runs (up to limit) of workflows that no
// live instance declares any more (store.UndeclaredWorkflowRuns: removed
// from the specs of every running instance), as Expire fails a run: such a
// run can no longer advance, and would wait for its deadline. It first
// deletes the statements of instances that ran out. It returns how many
// runs it failed.
func (w *Workflows) FailUndeclared(ctx context.Context, st *store.Store, limit int) (int, error) {
	now := w.cfg.Clock.DBNow()
	if _, err := st.DeleteExpiredDeclarations(ctx, now); err != nil {
		return 0, err
	}
	own := w.Names()
	ids, err := st.UndeclaredWorkflowRuns(ctx, own, now, limit)
	if err != nil {
		return 0, err
	}
	return w.failEach(ctx, st, ids, "failing", func(tx *store.Store, r wftype.WorkflowRun, _ time.Time) (string, error) {
		undeclared, err := tx.WorkflowRunUndeclared(ctx, r.ID, own, now)
		if err != nil || !undeclared {
			return "", err // declared again meanwhile
		}
		return fmt.Sprintf("workflow %s is declared by no running instance's specs (removed from them), so the run cannot go on", r.Workflow), nil
	})
}

// failEach fails each RUNNING run among ids for which why, asked with the
// run locked, gives an error message ("" leaves it), in a transaction of
// its own that also cancels the run's PENDING tasks (write); doing names
// the change in errors. It returns how many runs it failed.
func (w *Workflows) failEach(ctx context.Context, st *store.Store, ids []uuid.UUID, doing string,
	why func(tx *store.Store, r wftype.WorkflowRun, now time.Time) (string, error)) (int, error) {
	n := 0
	for _, id := range ids {
		var run wftype.WorkflowRun
		err := st.InTx(ctx, func(tx *store.Store) error {
			runs, steps, err := tx.LockWorkflowRuns(ctx, []uuid.UUID{id})
			if err != nil || len(runs) == 0 || runs[0].Status != wftype.RunRunning {
				return err // it ended meanwhile
			}
			now := w.cfg.Clock.Now()
			msg, err := why(tx, runs[0], now)
			if err != nil || msg == "" {
				return err
			}
			rs := newRunState(runs[0], nil, steps, now)
			rs.end(wftype.RunFailed, &msg)
			run = rs.run
			return w.write(ctx, tx, []*runState{rs})
		})
		if err != nil {
			return n, fmt.Errorf("error %s workflow run %s: %w", doing, id, err)
		}
		if run.Status == wftype.RunFailed {
			n++
			if _, err := w.cancelChildren(ctx, st, id); err != nil {
				return n, fmt.Errorf("error cancelling the child runs of workflow run %s: %w", id, err)
			}
		}
	}
	return n, nil
}
