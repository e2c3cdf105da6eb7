package api

import "net/http"

// requeueTask answers POST /admin/tasks/{task_id}/requeue (admin only): a
// DEAD_LETTER, FAILED or CANCELLED task goes back to PENDING with its retries
// reset. 409 when the task is live, or another live task now holds its
// dedup key.
func (s *Server) requeueTask(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathTaskID(r, "task_id")
	if prob != nil {
		return prob
	}
	t, err := s.store.RequeueTask(r.Context(), id.UUID)
	if err != nil {
		return s.taskNotFound(id, err)
	}
	writeJSON(w, http.StatusOK, s.newTaskView(t, p))
	return nil
}
