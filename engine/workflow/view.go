package workflow

import (
	"net/url"

	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// View is a run's status as the HTTP API and `wf workflows show --format
// json` show it: every step in the workflow's order, with its task type,
// upstream steps and tasks; inputs, outputs and errors redacted.
// statusURL is the run's address.
func (w *Workflows) View(s Status, statusURL string) wftype.WorkflowRunView {
	v := RunView(s.Run, statusURL)
	if s.Steps == nil {
		return v
	}
	wf, _ := w.cfg.Specs.Workflow(s.Run.Workflow)
	tasks := map[string][]wftype.WorkflowTaskView{}
	for _, t := range s.Tasks {
		tv := wftype.WorkflowTaskView{TaskID: t.TaskID.String(), Status: t.Status, Attempts: t.Attempts, Error: redact.Ptr(t.Error)}
		if t.Item >= 0 {
			item := t.Item
			tv.Item = &item
		}
		tasks[t.Step] = append(tasks[t.Step], tv)
	}
	runs := childViews(s.Children)
	v.Steps = make([]wftype.WorkflowStepView, 0, len(s.Steps))
	for _, row := range s.Steps {
		sv := wftype.WorkflowStepView{
			Step: row.Step, DependsOn: []string{}, Status: row.Status, Items: row.Items, Started: row.Started, Done: row.Done,
			Outputs: redact.JSON(row.Outputs), Error: redact.Ptr(row.Error), Tasks: tasks[row.Step],
		}
		if len(sv.Outputs) == 0 || string(sv.Outputs) == "null" {
			sv.Outputs = nil
		}
		if sv.Tasks == nil {
			sv.Tasks = []wftype.WorkflowTaskView{}
		}
		sv.Runs = runs[row.Step]
		if wf != nil {
			if step, ok := wf.Step(row.Step); ok {
				sv.Kind = step.Kind()
				stepKind(&sv, step)
				if deps := step.DependsOn(); deps != nil {
					sv.DependsOn = deps
				}
			}
		}
		sv.Waiting = waitView(row, statusURL)
		v.Steps = append(v.Steps, sv)
	}
	return v
}

// RunView is a run without its steps, as lists show it.
func RunView(r wftype.WorkflowRun, statusURL string) wftype.WorkflowRunView {
	inputs := redact.JSON(r.Inputs)
	if len(inputs) == 0 {
		inputs = []byte("{}")
	}
	v := wftype.WorkflowRunView{
		RunID: r.ID.String(), Workflow: r.Workflow, SchemaName: r.SchemaName, Status: r.Status,
		Inputs: inputs, Error: redact.Ptr(r.Error), Attempt: r.Attempt,
		CreatedAt: r.CreatedAt, Deadline: r.Deadline, FinishedAt: r.FinishedAt, StatusURL: statusURL,
	}
	origin(&v, r)
	return v
}

// waitView is what a RUNNING step with no task waits for, nil for any
// other step.
func waitView(row wftype.WorkflowStep, statusURL string) *wftype.WorkflowWaitView {
	if row.Status != wftype.StepRunning || !waiting(&row) {
		return nil
	}
	v := &wftype.WorkflowWaitView{Until: row.WakeAt}
	if row.WaitEvent != nil {
		v.Event = *row.WaitEvent
	}
	if row.WaitSignal != nil {
		v.Signal = *row.WaitSignal
		if statusURL != "" {
			v.SignalURL = statusURL + "/signals/" + url.PathEscape(v.Signal)
		}
	}
	return v
}
