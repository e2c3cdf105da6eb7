package workflow

import (
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// childViews groups the child runs of a run by the step that started them.
func childViews(children []wftype.WorkflowRun) map[string][]wftype.WorkflowChildView {
	out := map[string][]wftype.WorkflowChildView{}
	for _, c := range children {
		cv := wftype.WorkflowChildView{RunID: c.ID.String(), Status: c.Status, Error: redact.Ptr(c.Error)}
		if c.ParentItem >= 0 {
			item := c.ParentItem
			cv.Item = &item
		}
		out[c.ParentStep] = append(out[c.ParentStep], cv)
	}
	return out
}

// stepKind names what a step runs in its view: its task type, or the
// workflow of its child runs (neither for a step of another kind).
func stepKind(sv *wftype.WorkflowStepView, step *spec.Step) {
	if c := step.Child(); c != nil {
		sv.Workflow = c.Name()
		return
	}
	if t := step.TaskType(); t != nil {
		sv.TaskType = t.Name()
	}
}

// origin adds to a run's view what started it (an event, a schedule's
// tick), its parent for a child run, and its outputs (redacted).
func origin(v *wftype.WorkflowRunView, r wftype.WorkflowRun) {
	v.StartedBy = r.StartedBy
	if r.ParentRunID != nil {
		p := r.ParentRunID.String()
		v.ParentRunID, v.ParentStep = &p, r.ParentStep
		if r.ParentItem >= 0 {
			item := r.ParentItem
			v.ParentItem = &item
		}
	}
	if out := redact.JSON(r.Outputs); len(out) > 0 && string(out) != "null" {
		v.Outputs = out
	}
}
