package api

import (
	"encoding/json"
	"net/http"
)

// completeRequest is the body of POST /tasks/{task_id}/complete.
type completeRequest struct {
	leaseFields
	// Outputs replace the task's outputs (any JSON value; omitted keeps them).
	Outputs json.RawMessage `json:"outputs" wf:"nullable"` // null keeps them, as when left out
}

// completeTask answers POST /tasks/{task_id}/complete (worker tokens only):
// the remote worker holding the task's lease marks it COMPLETED with its
// outputs. 409 when the task is not ACTIVE under that lease.
func (s *Server) completeTask(w http.ResponseWriter, r *http.Request, p *principal, id taskID, req *completeRequest) error {
	return s.finishRemote(w, r, p, id, req.leaseFields, remoteOutcome{outputs: nullableJSON(req.Outputs)})
}
