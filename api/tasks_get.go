package api

import (
	"net/http"

	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// getTask answers GET /tasks/{task_id}, the status_url of a submission: the
// task's status, progress, outputs, error, attempts and timestamps, and
// the history of its last 20 attempts (attempt_history, oldest first), and
// the events it emitted (events: the last 50, with their status now). A task
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
	evs, err := s.store.TaskEvents(r.Context(), id.UUID)
	if err != nil {
		return s.taskNotFound(id, err)
	}
	v := s.newTaskView(t, p)
	views := []wftype.TaskView{v}
	if err := s.withWaitingReasons(r.Context(), []wftype.Task{t}, views); err != nil {
		return err
	}
	v = views[0]
	v.AttemptHistory = newAttemptViews(attempts, p)
	v.Events = make([]wftype.TaskEventView, 0, len(evs))
	for _, e := range evs {
		v.Events = append(v.Events, wftype.TaskEventView{EventID: e.ID.String(), EventType: e.EventType, CreatedAt: e.CreatedAt,
			Status: e.Status, Error: redact.Ptr(e.Error)})
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
