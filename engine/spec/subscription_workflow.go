package spec

import "time"

// Triggers: a Subscription or a Schedule may start a run of a workflow
// (`workflow: NAME`) instead of creating a task (`task_type`). Their inputs
// are then checked against the workflow's inputs schema, as a task's are
// against its task type's: the workflow's inputs stand in for a task type
// (Workflow.inputsTarget), so every check of mapped inputs applies. A
// triggered run is deduplicated by its start key: one run per event and
// subscription, one per schedule tick.

// Workflow is the name of the workflow whose runs the subscription starts,
// "" when it creates tasks (TaskType).
func (s *Subscription) Workflow() string {
	if s.workflow == nil {
		return ""
	}
	return s.workflow.name
}

// Workflow is the name of the workflow whose runs the schedule starts, ""
// when it creates tasks (TaskType).
func (s *Schedule) Workflow() string {
	if s.workflow == nil {
		return ""
	}
	return s.workflow.name
}

// StartKey is the start key of the run a schedule starts for tick: one run
// per tick, however many leaders fire it.
func (s *Schedule) StartKey(tick time.Time) string { return s.DedupKey(tick) }

// triggerTarget resolves what a subscription or schedule document creates:
// the task type named at /task_type, or, with workflow set, the workflow
// named at /workflow, whose inputs target (inputsTarget) its inputs are
// checked against. Exactly one of the two must be given. target is nil
// when the reference is unknown or invalid (its errors recorded).
func (c *checker) triggerTarget(d *document, taskType, workflow string) (target *TaskType, w *Workflow) {
	switch {
	case workflow != "" && taskType != "":
		c.failKey(d, "/workflow", "a %s creates a task (task_type) or starts a workflow run (workflow), not both", d.kind)
		return nil, nil
	case workflow != "":
		w, _ = c.lookupWorkflow(d, "/workflow", workflow)
		if w == nil {
			return nil, nil
		}
		return w.inputsTarget(), w
	case taskType == "":
		c.fail(d, "", "a %s needs task_type (the task it creates) or workflow (the workflow it starts a run of)", d.kind)
		return nil, nil
	}
	t, _ := c.lookupTaskType(d, "/task_type", taskType, false)
	return t, nil
}

// defaultWorkflowSubscriptionKey is the start key expression of a
// subscription that starts workflow runs and names no dedup_key: one run
// per event and subscription.
func defaultWorkflowSubscriptionKey(subscription string) string {
	return `"evt:" + event.event_id + ":` + subscription + `"`
}
