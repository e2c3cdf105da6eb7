package api

import (
	"errors"
	"net/http"

	"github.com/wfhq/wf/wftype"
)

// failRequest is the body of POST /tasks/{task_id}/fail.
type failRequest struct {
	leaseFields
	// Error says what went wrong (required).
	Error string `json:"error"`
	// Permanent marks a failure a retry cannot fix: FAILED at once.
	Permanent bool `json:"permanent"`
}

// failTask answers POST /tasks/{task_id}/fail (worker tokens only): the
// remote worker holding the task's lease reports a failure, and the task
// takes the path any failed run takes — back to PENDING with the task type's
// backoff while retries remain, else DEAD_LETTER; FAILED at once when
// permanent. 409 when the task is not ACTIVE under that lease.
func (s *Server) failTask(w http.ResponseWriter, r *http.Request, p *principal, id taskID, req *failRequest) error {
	if req.Error == "" {
		return validationOne("/error", "is required: what went wrong")
	}
	runErr := errors.New(req.Error)
	if req.Permanent {
		runErr = wftype.Permanent(runErr)
	}
	return s.finishRemote(w, r, p, id, req.leaseFields, remoteOutcome{err: runErr})
}
