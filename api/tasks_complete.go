package api

import (
	"encoding/json"
	"net/http"

	"github.com/wfhq/wf/wftype"
)

// completeRequest is the body of POST /tasks/{task_id}/complete.
type completeRequest struct {
	leaseFields
	// Outputs replace the task's outputs (any JSON value; omitted keeps them).
	Outputs json.RawMessage `json:"outputs"`
}

// completeTask answers POST /tasks/{task_id}/complete (worker tokens only):
// the remote worker holding the task's lease marks it COMPLETED with its
// outputs. 409 when the task is not ACTIVE under that lease.
func (s *Server) completeTask(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathTaskID(r, "task_id")
	if prob != nil {
		return prob
	}
	var req completeRequest
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	if prob := req.check(); prob != nil {
		return prob
	}
	t, err := s.finishRemote(r, p, id, req.leaseFields, func(*wftype.Task) remoteOutcome {
		return remoteOutcome{outputs: nullableJSON(req.Outputs)}
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.newTaskView(t, p))
	return nil
}
