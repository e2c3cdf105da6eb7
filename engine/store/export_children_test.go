package store

// RunningChildrenOfEndedSQL is RunningChildrenOfEndedRuns' statement, for
// plan tests.
func RunningChildrenOfEndedSQL() string { return runningChildrenOfEndedSQL }

// LockWorkflowRunsSQL is LockWorkflowRuns' statement, for plan tests.
func LockWorkflowRunsSQL() string { return lockWorkflowRunsSQL }
