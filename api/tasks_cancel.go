package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/wfhq/wf/wftype"
)

// cancelTask answers POST /tasks/{task_id}/cancel: a PENDING or ACTIVE task
// becomes CANCELLED and the instance running it stops its runner. 409 when
// the task has already ended.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.changeTask(w, r, p, true, s.store.CancelTask)
}

// changeTask answers a POST that changes the task of the {task_id} path
// parameter with change (a store method): 200 with the task as it became,
// 404 when there is no such task — or, when visible is set, none the token
// may see (an admin route leaves it unset).
func (s *Server) changeTask(w http.ResponseWriter, r *http.Request, p *principal, visible bool, change func(context.Context, uuid.UUID) (wftype.Task, error)) error {
	id, prob := pathTaskID(r, "task_id")
	if prob != nil {
		return prob
	}
	if visible {
		if _, err := s.visibleTask(r.Context(), p, id); err != nil {
			return err
		}
	}
	t, err := change(r.Context(), id.UUID)
	if err != nil {
		return s.taskNotFound(id, err)
	}
	writeJSON(w, http.StatusOK, s.newTaskView(t, p))
	return nil
}
