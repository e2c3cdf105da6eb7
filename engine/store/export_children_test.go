package store

// RunningChildrenOfEndedSQL is RunningChildrenOfEndedRuns' statement, for
// plan tests.
func RunningChildrenOfEndedSQL() string { return runningChildrenOfEndedSQL }
