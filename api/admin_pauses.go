package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// listPauses answers GET /admin/pauses (admin only): every paused task type
// and tenant. The pause routes answer store.Pause as it is: its JSON form is
// schema Pause.
func (s *Server) listPauses(w http.ResponseWriter, r *http.Request, _ *principal) error {
	pauses, err := s.store.ListPauses(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": pauses})
	return nil
}

// pauseQueue answers POST /admin/pauses (admin only): no instance claims
// the PENDING tasks of the task type or tenant (schema_name) any more, from
// its next claim on; running tasks run on and new tasks are accepted and
// wait. 201 with the pause, or 200 with the existing one when it was
// already paused; 404 for a task type the specs do not declare or a tenant
// no catalog has.
func (s *Server) pauseQueue(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req struct {
		Kind   string `json:"kind"`
		Name   string `json:"name"`
		Reason string `json:"reason"`
	}
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	kind, prob := s.pauseTarget(req.Kind, req.Name, "/")
	if prob != nil {
		return prob
	}
	if len(req.Reason) > 1000 {
		return fieldProblem("/reason", "must be at most 1000 characters")
	}
	pause, created, err := s.store.PauseQueue(r.Context(), store.PauseParams{Kind: kind, Name: req.Name, Reason: req.Reason, By: p.name})
	if errors.Is(err, wftype.ErrNotFound) {
		return notFound("%s", strings.TrimSuffix(err.Error(), ": "+wftype.ErrNotFound.Error()))
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		s.log.Info("paused", "kind", kind, "name", req.Name, "by", p.name, "reason", req.Reason)
	}
	writeJSON(w, status, pause)
	return nil
}

// resumeQueue answers DELETE /admin/pauses/{kind}/{name} (admin only): the
// pause is removed and the dispatchers woken. 404 when it was not paused.
func (s *Server) resumeQueue(w http.ResponseWriter, r *http.Request, p *principal) error {
	name := r.PathValue("name")
	kind, prob := s.pauseTarget(r.PathValue("kind"), name, "")
	if prob != nil {
		return prob
	}
	pause, err := s.store.ResumeQueue(r.Context(), kind, name)
	if err != nil {
		return notFoundAs(err, notFound("%s %q is not paused", kind, name))
	}
	s.log.Info("resumed", "kind", kind, "name", name, "by", p.name)
	writeJSON(w, http.StatusOK, pause)
	return nil
}

// pauseTarget checks a pause's kind and name: a body's members (pointer
// "/": a new pause, whose task type must be in the specs) or the path's
// parameters (pointer "": a resume, which must work for a type the specs
// dropped since).
func (s *Server) pauseTarget(kind, name, pointer string) (store.PauseKind, *problem) {
	k := store.PauseKind(kind)
	bad := func(field, msg string) *problem {
		if pointer == "" {
			return invalidParameter(field, "%s", msg)
		}
		return fieldProblem(pointer+field, msg)
	}
	switch {
	case !k.Valid():
		return "", bad("kind", "must be task_type or tenant")
	case name == "":
		return "", bad("name", "is required: a task type, or a tenant's schema_name")
	case len(name) > 255:
		return "", bad("name", "must be at most 255 characters")
	case k == store.PauseTaskType && pointer != "":
		if _, ok := s.cfg.Specs.TaskType(name); !ok {
			return "", notFound("no task type %q in the specs", name)
		}
	}
	return k, nil
}
