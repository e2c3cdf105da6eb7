package store

import "context"

// InsertTasksVia is InsertTasks through COPY (viaCopy) or through one
// statement, whatever the batch's size: the tests check that both answer
// alike and the benchmark compares them.
func (s *Store) InsertTasksVia(ctx context.Context, tasks []NewTask, viaCopy bool) ([]InsertResult, error) {
	return s.insertTasks(ctx, tasks, viaCopy)
}

// TryLeadAndProbeSQL is TryLeadAndProbe's statement, for plan tests.
func TryLeadAndProbeSQL() string { return tryLeadAndProbeSQL }

// WorkflowWaitsDueSQL is WorkflowWaitsDue's statement, for plan tests.
func WorkflowWaitsDueSQL() string { return workflowWaitsDueSQL }
