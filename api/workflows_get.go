package api

import (
	"errors"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/wftype"
)

// getWorkflowRun answers GET /workflows/runs/{run_id}, a run's status_url:
// the run and every step (in the workflow's order) with its status, item
// counts, outputs, error and tasks. A run of a tenant the token may not see
// answers 404, as a missing one.
func (s *Server) getWorkflowRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathTaskID(r, "run_id")
	if prob != nil {
		return prob
	}
	if _, err := s.visibleRun(r, p, id.UUID); err != nil {
		return err
	}
	return s.writeRunStatus(w, r, id.UUID)
}

// writeRunStatus answers 200 with the run id's status view (404 where it is
// gone).
func (s *Server) writeRunStatus(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	st, err := s.workflows.Get(r.Context(), s.store, id)
	if err != nil {
		return s.runNotFound(id, err)
	}
	writeJSON(w, http.StatusOK, s.newRunStatusView(st))
	return nil
}

// newRunStatusView is a run with its steps and their tasks.
func (s *Server) newRunStatusView(st workflow.Status) wftype.WorkflowRunView {
	return s.workflows.View(st, s.url("/workflows/runs/"+st.Run.ID.String()))
}

// visibleRun reads a run and checks the principal may see its tenant: a
// run of another tenant answers exactly as a missing one (404).
func (s *Server) visibleRun(r *http.Request, p *principal, id uuid.UUID) (wftype.WorkflowRun, error) {
	run, err := s.store.GetWorkflowRun(r.Context(), id)
	if err != nil {
		return run, s.runNotFound(id, err)
	}
	sc, err := s.scopeOf(r.Context(), p)
	if err != nil {
		return run, err
	}
	if !sc.has(run.SchemaName) {
		return wftype.WorkflowRun{}, notFound("no workflow run %s", id)
	}
	return run, nil
}

// runNotFound words a store miss of a run.
func (s *Server) runNotFound(id uuid.UUID, err error) error {
	if errors.Is(err, wftype.ErrNotFound) {
		return notFound("no workflow run %s", id)
	}
	return err
}

// listWorkflowRuns answers GET /workflows/runs: runs newest first, filtered
// by workflow, status and tenant (schema_name, repeatable), a page at a
// time (pass next_cursor back as cursor). A token limited to catalogs sees
// only their tenants' runs, whatever tenants it asks for.
func (s *Server) listWorkflowRuns(w http.ResponseWriter, r *http.Request, p *principal) error {
	q, prob := parseQuery(r, []string{"limit", "cursor", "workflow", "status"}, []string{"schema_name"})
	if prob != nil {
		return prob
	}
	limit, prob := q.limit(50, 500)
	if prob != nil {
		return prob
	}
	f := store.WorkflowRunFilter{Workflow: q.get("workflow"), Status: wftype.RunStatus(q.get("status")), Schemas: q.list("schema_name"), Limit: limit + 1}
	if len(f.Schemas) == 0 {
		f.Schemas = nil // every tenant
	}
	switch f.Status {
	case "", wftype.RunRunning, wftype.RunCompleted, wftype.RunFailed, wftype.RunCancelled:
	default:
		return invalidParameter("status", "must be RUNNING, COMPLETED, FAILED or CANCELLED")
	}
	if c := q.get("cursor"); c != "" {
		id, err := uuid.Parse(c)
		if err != nil {
			return invalidParameter("cursor", "must be the next_cursor of a previous page")
		}
		f.Before = &id
	}
	sc, err := s.scopeOf(r.Context(), p)
	if err != nil {
		return err
	}
	if !sc.all {
		if f.Schemas == nil {
			f.Schemas = sc.schemas
		} else {
			f.Schemas = slices.DeleteFunc(f.Schemas, func(n string) bool { return !sc.has(n) })
		}
		if len(f.Schemas) == 0 {
			writeJSON(w, http.StatusOK, wftype.WorkflowRunPage{Runs: []wftype.WorkflowRunView{}})
			return nil
		}
	}
	runs, err := s.store.ListWorkflowRuns(r.Context(), f)
	if err != nil {
		return err
	}
	page := wftype.WorkflowRunPage{Runs: make([]wftype.WorkflowRunView, 0, len(runs))}
	if len(runs) > limit {
		runs = runs[:limit]
		page.NextCursor = runs[limit-1].ID.String()
	}
	for _, run := range runs {
		page.Runs = append(page.Runs, s.newRunView(run))
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}
