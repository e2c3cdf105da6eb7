package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/wfhq/wf/engine/workflow"
)

// signalWorkflowRun answers POST /workflows/runs/{run_id}/signals/{name}:
// the body (a JSON value, the signal's payload; empty means {}) is sent to
// the run's approval steps waiting for signal name, checked against their
// payload schema (400 listing every error under /payload, and nothing
// changes); they complete with it as their outputs and what they unblock
// starts, in one transaction. Who may send it: the roles of the workflow's
// api.signal (default client and admin; else 403), for a run of a tenant
// the token may see (else 404, as a missing run). 404 also for a workflow
// with no approval step of that signal; 409 when the run is not RUNNING or
// no step waits for the signal now. It answers with the run's status.
func (s *Server) signalWorkflowRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathTaskID(r, "run_id")
	if prob != nil {
		return prob
	}
	run, err := s.visibleRun(r, p, id.UUID)
	if err != nil {
		return err
	}
	if wf, ok := s.cfg.Specs.Workflow(run.Workflow); ok && !wf.CanSignal(string(p.role)) {
		msg := "takes no signal over the API"
		if roles := wf.SignalRoles(); len(roles) > 0 {
			msg = "takes signals only from a token of role " + strings.Join(roles, " or ")
		}
		return forbidden("workflow %s %s", wf.Name(), msg)
	}
	var payload json.RawMessage
	if r.ContentLength != 0 { // no body at all: the payload is {}
		body, prob := s.readBody(w, r)
		if prob != nil {
			return prob
		}
		payload = bytes.TrimSpace(body)
	}
	if string(payload) == "null" {
		payload = nil
	}
	name := r.PathValue("name")
	_, err = s.workflows.Signal(r.Context(), s.store, id.UUID, name, payload)
	var se *workflow.SignalError
	if errors.As(err, &se) {
		return inputsProblem("/payload", se.Message, se.Error(), se.Inputs)
	}
	if err != nil {
		return err
	}
	return s.writeRunStatus(w, r, id.UUID)
}
