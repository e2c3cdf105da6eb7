package execution

import (
	"time"

	"github.com/wfhq/wf/wftype"
)

// Observer is told about claims and outcomes, wherever a task runs (the
// metrics); implementations must be fast and safe for concurrent use.
type Observer interface {
	// Claimed is called with the tasks of one claim and how long it took.
	Claimed(tasks []wftype.Task, took time.Duration)
	// Finished is called once a task's outcome is written.
	Finished(task *wftype.Task, status wftype.TaskStatus, ran time.Duration)
}

// LeaseObserver is told about heartbeats and lost leases. An Observer may
// also implement it (the metrics do); the dispatcher checks.
type LeaseObserver interface {
	// Heartbeat is called after one batched heartbeat of tasks leases.
	Heartbeat(tasks int, took time.Duration)
	// LeaseLost is called when a run is cancelled because its lease was lost.
	LeaseLost(task *wftype.Task)
}
