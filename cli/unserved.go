package cli

import (
	"context"
	"fmt"

	"github.com/wfhq/wf/engine"
)

// unservedError says why eng cannot run tasks of taskType when its service
// is not configured here (engine.Engine.Unserved), nil when it can: wf
// exec refuses such a type before it creates a task that could only fail.
func unservedError(eng *engine.Engine, taskType string) error {
	for _, u := range eng.Unserved() {
		if u.TaskType == taskType {
			return fmt.Errorf("task type %s is not served by this instance: %s", taskType, u.Reason)
		}
	}
	return nil
}

// execUnserved refuses a wf exec whose task type this instance does not
// serve: the type to create, or that of the task --task-id names (read
// first, so the task is not taken over only to fail: it stays with its
// claim, for a worker that has the settings).
func execUnserved(ctx context.Context, eng *engine.Engine, req execRequest) error {
	taskType := req.create.TaskType
	if req.taskID != nil {
		t, err := eng.Store().GetTask(ctx, *req.taskID)
		if err != nil {
			return nil // Take says what is wrong with the id
		}
		taskType = t.TaskType
	}
	return unservedError(eng, taskType)
}
