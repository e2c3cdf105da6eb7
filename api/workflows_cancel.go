package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// cancelWorkflowRun answers POST /workflows/runs/{run_id}/cancel: a RUNNING
// run and its unfinished steps become CANCELLED, its pending tasks are
// cancelled and its running ones told to stop; workflow.cancelled is
// emitted. 409 when the run already ended.
func (s *Server) cancelWorkflowRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.controlRun(w, r, p, s.workflows.Cancel)
}

// retryWorkflowRun answers POST /workflows/runs/{run_id}/retry: a FAILED or
// CANCELLED run runs again from the steps that did not complete (completed
// steps keep their outputs), with a new deadline. 409 for a run in another
// status.
func (s *Server) retryWorkflowRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.controlRun(w, r, p, s.workflows.Retry)
}

// controlRun applies a control operation to a run the principal may see
// and answers with the run's status.
func (s *Server) controlRun(w http.ResponseWriter, r *http.Request, p *principal,
	op func(ctx context.Context, st *store.Store, id uuid.UUID) (wftype.WorkflowRun, error)) error {
	id, prob := pathTaskID(r, "run_id")
	if prob != nil {
		return prob
	}
	if _, err := s.visibleRun(r, p, id.UUID); err != nil {
		return err
	}
	if _, err := op(r.Context(), s.store, id.UUID); err != nil {
		return s.runNotFound(id.UUID, err)
	}
	st, err := s.workflows.Get(r.Context(), s.store, id.UUID)
	if err != nil {
		return s.runNotFound(id.UUID, err)
	}
	writeJSON(w, http.StatusOK, s.newRunStatusView(st))
	return nil
}
