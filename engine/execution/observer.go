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
