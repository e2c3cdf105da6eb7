package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/wfhq/wf/wftype"
)

// Child runs (migration 032): a run started by a `workflow:` step of
// another run carries that run's id (parent_run_id) and the step's name and
// item. The parent is advanced when the child ends, in the transaction that
// ends it; these statements list a run's children.

// ChildWorkflowRuns lists the runs that the steps of run parent started,
// oldest first (through the partial index on parent_run_id).
func (s *Store) ChildWorkflowRuns(ctx context.Context, parent uuid.UUID) ([]wftype.WorkflowRun, error) {
	return queryAll(ctx, s.db, "listing the child runs of a workflow run", `
SELECT `+workflowRunColumns+` FROM tasks.workflow_runs
WHERE parent_run_id = $1
ORDER BY run_id`, scanWorkflowRun, parent)
}

// RunningChildrenOfEndedRuns lists up to limit RUNNING child runs whose
// parent run is no longer RUNNING (it failed, was cancelled or timed out):
// the step pass cancels them (engine/workflow CancelOrphans). A parent that
// ended cancels its children after its own transaction committed, never in
// it, so that locks on runs are always taken child before parent (a child's
// end locks its parent); this finds those a crash left behind. The
// candidates come from the partial index on RUNNING runs' deadlines; a
// parent deleted by retention counts as ended.
func (s *Store) RunningChildrenOfEndedRuns(ctx context.Context, limit int) ([]uuid.UUID, error) {
	return collectIDs(ctx, s, "listing the running children of ended workflow runs", runningChildrenOfEndedSQL, limit)
}

// runningChildrenOfEndedSQL is RunningChildrenOfEndedRuns' statement. Every
// instance with workflows runs it each poll interval: it reads the RUNNING
// runs through the partial index on them (few beside the finished ones),
// and each candidate's parent by primary key
// (TestRunningChildrenOfEndedRunsPlan).
const runningChildrenOfEndedSQL = `
SELECT c.run_id FROM tasks.workflow_runs c
WHERE c.status = 'RUNNING' AND c.parent_run_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM tasks.workflow_runs p WHERE p.run_id = c.parent_run_id AND p.status = 'RUNNING')
ORDER BY c.run_id
LIMIT $1`

// RunningChildRuns lists the RUNNING child runs of run parent.
func (s *Store) RunningChildRuns(ctx context.Context, parent uuid.UUID) ([]uuid.UUID, error) {
	return collectIDs(ctx, s, "listing the running child runs of a workflow run", `
SELECT run_id FROM tasks.workflow_runs
WHERE parent_run_id = $1 AND status = 'RUNNING'
ORDER BY run_id`, parent)
}

// WorkflowRunByStartKey reads the run that holds a start key (an event's or
// a schedule tick's); wftype.ErrNotFound when none does.
func (s *Store) WorkflowRunByStartKey(ctx context.Context, key string) (wftype.WorkflowRun, error) {
	rows, err := queryAll(ctx, s.db, "reading a workflow run by its start key", `
SELECT `+workflowRunColumns+` FROM tasks.workflow_runs WHERE start_key = $1`, scanWorkflowRun, key)
	if err != nil {
		return wftype.WorkflowRun{}, err
	}
	if len(rows) == 0 {
		return wftype.WorkflowRun{}, wftype.ErrNotFound
	}
	return rows[0], nil
}
