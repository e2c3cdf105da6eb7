package api

import (
	"encoding/json"
	"math"
	"net/http"
)

// leaseFields identify the claim a remote worker reports under: the owner_id
// of the instance that claimed the task (handed to the worker with the task)
// and, optionally, the attempt number, which fences off a worker of an
// earlier attempt.
type leaseFields struct {
	OwnerID string `json:"owner_id"`
	Attempt int    `json:"attempt"`
}

// leased adapts the handler of a remote worker's route (progress, complete,
// fail) to the route table: it reads the task_id path parameter and the
// body into a new request holding leaseFields, checks the lease fields, and
// hands the task id and the request to handle.
func leased[R any, PR interface {
	*R
	check() *problem
}](s *Server, handle func(w http.ResponseWriter, r *http.Request, p *principal, id taskID, req PR) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		id, prob := pathTaskID(r, "task_id")
		if prob != nil {
			return prob
		}
		req := PR(new(R))
		if prob := s.decodeBody(w, r, req); prob != nil {
			return prob
		}
		if prob := req.check(); prob != nil {
			return prob
		}
		return handle(w, r, p, id, req)
	}
}

// check answers 400 when the lease fields are missing or malformed.
func (l leaseFields) check() *problem {
	if l.OwnerID == "" || len(l.OwnerID) > 255 {
		return validationOne("/owner_id", "is required: the owner_id the task was claimed by (at most 255 characters)")
	}
	if l.Attempt < 1 || l.Attempt > math.MaxInt32 {
		return validationOne("/attempt", "is required: the attempt number of the claim (the task's attempts when it was handed over, 1 to 2147483647)")
	}
	return nil
}

// progressRequest is the body of POST /tasks/{task_id}/progress.
type progressRequest struct {
	leaseFields
	Progress json.RawMessage `json:"progress"`
}

// reportProgress answers POST /tasks/{task_id}/progress, the seed's
// update_task for remote workers (worker tokens only): it merges a JSON
// object into the task's progress, only while the task is ACTIVE under the
// worker's lease (owner_id, and attempt when given) — 409 otherwise.
func (s *Server) reportProgress(w http.ResponseWriter, r *http.Request, p *principal, id taskID, req *progressRequest) error {
	if len(req.Progress) == 0 {
		return validationOne("/progress", "is required: a JSON object merged into the task's progress")
	}
	if req.Progress[0] != '{' {
		return validationOne("/progress", "must be a JSON object (merged into the task's progress)")
	}
	if _, err := s.visibleTask(r.Context(), p, id); err != nil {
		return err
	}
	t, err := s.store.SetProgressActive(r.Context(), id.UUID, req.lease(), req.Progress)
	if err != nil {
		return s.taskNotFound(id, err)
	}
	writeJSON(w, http.StatusOK, s.newTaskView(t, p))
	return nil
}
