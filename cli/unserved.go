package cli

import (
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
