package api

import (
	"net/http"

	"github.com/wfhq/wf/engine/store"
)

// bulkRequeueView answers a bulk requeue (schema BulkRequeue).
type bulkRequeueView struct {
	Kind     string `json:"kind"`
	DryRun   bool   `json:"dry_run"`
	Matched  *int64 `json:"matched,omitempty"`
	Requeued int    `json:"requeued"`
	Skipped  int    `json:"skipped"`
	More     bool   `json:"more"`
}

// requeueDeadLetters answers POST /admin/dead-letters/requeue (admin only):
// the dead letters that match the filter go back to PENDING, up to limit
// (default 1000) per call, oldest first. Tasks match by task_type and
// schema_name, events by event_type and schema_name; an empty filter
// matches every dead letter of the kind. Those whose dedup key a live task
// or event now holds are skipped and counted; more says whether more match.
// With dry_run nothing changes and matched counts every match.
func (s *Server) requeueDeadLetters(w http.ResponseWriter, r *http.Request, _ *principal) error {
	var req struct {
		Kind        string   `json:"kind"`
		TaskTypes   []string `json:"task_type"`
		EventTypes  []string `json:"event_type"`
		SchemaNames []string `json:"schema_name"`
		Limit       int      `json:"limit"`
		DryRun      bool     `json:"dry_run"`
	}
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	switch {
	case req.Kind != "tasks" && req.Kind != "events":
		return fieldProblem("/kind", "must be tasks or events")
	case req.Kind == "tasks" && len(req.EventTypes) > 0:
		return fieldProblem("/event_type", "filters events only; use task_type for tasks")
	case req.Kind == "events" && len(req.TaskTypes) > 0:
		return fieldProblem("/task_type", "filters tasks only; use event_type for events")
	case req.Limit < 0 || req.Limit > 10000:
		return fieldProblem("/limit", "must be from 1 to 10000")
	}
	f := store.DeadLetterFilter{TaskTypes: req.TaskTypes, EventTypes: req.EventTypes, Limit: req.Limit}
	if len(req.SchemaNames) > 0 {
		f.SchemaNames = req.SchemaNames
	}
	if req.DryRun {
		n, err := s.store.CountDeadLetters(r.Context(), f, req.Kind == "events")
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, bulkRequeueView{Kind: req.Kind, DryRun: true, Matched: &n})
		return nil
	}
	var res store.BulkRequeue
	var err error
	if req.Kind == "tasks" {
		res, err = s.store.RequeueDeadLetterTasks(r.Context(), f)
	} else {
		res, err = s.store.RequeueDeadLetterEvents(r.Context(), f)
	}
	if err != nil {
		return err
	}
	s.log.Info("dead letters requeued in bulk", "kind", req.Kind, "requeued", res.Requeued, "skipped", res.Skipped, "more", res.More)
	writeJSON(w, http.StatusOK, bulkRequeueView{Kind: req.Kind, Requeued: res.Requeued, Skipped: res.Skipped, More: res.More})
	return nil
}

// fieldProblem is a 400 about one field of the body.
func fieldProblem(pointer, message string) *problem {
	return validationFailed("%s: %s", pointer, message).at(pointer, message)
}
