package api

import "net/http"

// requeueTask answers POST /admin/tasks/{task_id}/requeue (admin only): a
// DEAD_LETTER, FAILED or CANCELLED task goes back to PENDING with its retries
// reset. 409 when the task is live, or another live task now holds its
// dedup key.
func (s *Server) requeueTask(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.changeTask(w, r, p, false, s.store.RequeueTask)
}
