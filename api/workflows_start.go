package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/wftype"
)

// startRunRequest is the body of POST /workflows/{name}/runs.
type startRunRequest struct {
	SchemaName string          `json:"schema_name"`
	Inputs     json.RawMessage `json:"inputs" wf:"nullable"` // null: no inputs, as when left out
}

// startWorkflowRun answers POST /workflows/{name}/runs: it starts a run of
// a workflow whose spec lets the caller's role start it (api.start; else
// 403), in a tenant (schema_name, default "system"; a token limited to
// catalogs may only use theirs, else 404), its inputs checked against the
// workflow's inputs schema (400 listing every error under /inputs). The run
// and the tasks of its first steps are created in one transaction: 202
// Accepted with the run, its status_url and a Location header.
func (s *Server) startWorkflowRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	name := r.PathValue("name")
	wf, ok := s.cfg.Specs.Workflow(name)
	if !ok {
		return notFound("no workflow %s", quote(name))
	}
	if !wf.CanStart(string(p.role)) {
		msg := "is started only by wf itself, never over the API"
		if roles := wf.StartRoles(); len(roles) > 0 {
			msg = "may be started over the API only with a token of role " + strings.Join(roles, " or ")
		}
		return forbidden("workflow %s %s", wf.Name(), msg)
	}
	var req startRunRequest
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	if prob := checkObject("/inputs", req.Inputs); prob != nil {
		return prob
	}
	if string(req.Inputs) == "null" {
		req.Inputs = nil
	}
	schema, err := s.systemOrTenant(r, p, req.SchemaName)
	if err != nil {
		return err
	}
	run, err := s.workflows.Start(r.Context(), s.store, workflow.StartRequest{Workflow: wf.Name(), SchemaName: schema, Inputs: req.Inputs})
	var ie *workflow.InputError
	if errors.As(err, &ie) {
		return inputsProblem("/inputs", ie.Message, ie.Error(), ie.Inputs)
	}
	if err != nil {
		return err
	}
	v := s.newRunView(run)
	w.Header().Set("Location", v.StatusURL)
	writeJSON(w, http.StatusAccepted, v)
	return nil
}

// newRunView converts a run row.
func (s *Server) newRunView(r wftype.WorkflowRun) wftype.WorkflowRunView {
	return workflow.RunView(r, s.url("/workflows/runs/"+r.ID.String()))
}

// inputsProblem is the 400 for a body's object at base that failed
// validation: one error at base for message, else summary with an error for
// each of inputs (their pointers below base).
func inputsProblem(base, message, summary string, inputs spec.InputErrors) *problem {
	if message != "" {
		return validationOne(base, message)
	}
	prob := validationFailed("%s", summary)
	for _, e := range inputs {
		prob.Errors = append(prob.Errors, pointerError(base+e.Pointer, e.Message))
	}
	return prob
}
