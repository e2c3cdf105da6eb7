package api

import "net/http"

// getTask answers GET /tasks/{task_id}, the status_url of a submission: the
// task's status, progress, outputs, error, attempts and timestamps, and
// the history of its last 20 attempts (attempt_history, oldest first). A task
// of a tenant the token may not see answers 404, as a missing one.
func (s *Server) getTask(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathTaskID(r, "task_id")
	if prob != nil {
		return prob
	}
	t, err := s.visibleTask(r.Context(), p, id)
	if err != nil {
		return err
	}
	attempts, err := s.store.GetAttempts(r.Context(), id.UUID)
	if err != nil {
		return s.taskNotFound(id, err)
	}
	v := s.newTaskView(t, p)
	v.AttemptHistory = newAttemptViews(attempts, p)
	writeJSON(w, http.StatusOK, v)
	return nil
}
