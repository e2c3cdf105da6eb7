package api

import "net/http"

// cancelTask answers POST /tasks/{task_id}/cancel: a PENDING or ACTIVE task
// becomes CANCELLED and the instance running it stops its runner. 409 when
// the task has already ended.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathTaskID(r, "task_id")
	if prob != nil {
		return prob
	}
	if _, err := s.visibleTask(r.Context(), p, id); err != nil {
		return err
	}
	t, err := s.store.CancelTask(r.Context(), id.UUID)
	if err != nil {
		return s.taskNotFound(id, err)
	}
	writeJSON(w, http.StatusOK, s.newTaskView(t, p))
	return nil
}
