package engine

import (
	"slices"

	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/runners"
)

// Unserved are the task types of the specs that this instance cannot run
// because their service is not configured (their builtin handler is marked
// unserved: builtin.Registry.MarkUnserved), each with the missing setting,
// sorted by task type. The instance never claims their tasks, and the
// subscriptions that create them are inactive on its event consumer.
func (e *Engine) Unserved() []runnerset.Unserved {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]runnerset.Unserved(nil), e.unserved...)
}

// logUnserved says, one line per task type, which task types this instance
// cannot serve and why.
func (e *Engine) logUnserved() {
	for _, u := range e.unserved {
		e.cfg.Logger.Warn("task type not served by this instance: its service is not configured",
			"task_type", u.TaskType, "reason", u.Reason)
	}
}

// dropServed removes from unserved the task types another runner of the
// engine serves all the same (a remote job runner such as Cloud Run, whose
// worker may have the settings this instance lacks).
func (e *Engine) dropServed(unserved []runnerset.Unserved) []runnerset.Unserved {
	return dropServedBy(e.capability, unserved)
}

// dropServedBy removes from unserved the task types caps serves.
func dropServedBy(caps runners.CapabilityMap, unserved []runnerset.Unserved) []runnerset.Unserved {
	return slices.DeleteFunc(unserved, func(u runnerset.Unserved) bool {
		for pair := range caps {
			if pair.TaskType == u.TaskType {
				return true
			}
		}
		return false
	})
}
