package api

import (
	"net/http"
	"slices"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// bulkCancelView answers a bulk cancel (schema BulkCancel).
type bulkCancelView struct {
	DryRun    bool   `json:"dry_run"`
	Matched   *int64 `json:"matched,omitempty"`
	Cancelled int    `json:"cancelled"`
	More      bool   `json:"more"`
}

// bulkMatch checks a bulk request (schema BulkTasksRequest) and turns it
// into a store match: statuses among allowed (default defaults), a filter
// or all, a limit of 1 to 10000.
func bulkMatch(req wftype.BulkTasksRequest, allowed, defaults []wftype.TaskStatus) (store.TaskMatch, *problem) {
	m := store.TaskMatch{TaskTypes: req.TaskType, CreatedFrom: req.CreatedFrom, CreatedTo: req.CreatedTo, Limit: req.Limit}
	for _, st := range req.Status {
		if !slices.Contains(allowed, st) {
			return m, fieldProblem("/status", "must hold only "+statusList(allowed))
		}
		m.Statuses = append(m.Statuses, st)
	}
	if len(m.Statuses) == 0 {
		m.Statuses = defaults
	}
	if len(req.SchemaName) > 0 {
		m.SchemaNames = req.SchemaName
	}
	switch {
	case req.Limit < 0 || req.Limit > 10000:
		return m, fieldProblem("/limit", "must be from 1 to 10000")
	case req.CreatedFrom != nil && req.CreatedTo != nil && !req.CreatedFrom.Before(*req.CreatedTo):
		return m, fieldProblem("/created_to", "must be after created_from")
	case !req.All && len(req.TaskType) == 0 && len(req.SchemaName) == 0 && req.CreatedFrom == nil && req.CreatedTo == nil:
		return m, fieldProblem("/all", "give task_type, schema_name, created_from or created_to, or all: true to match every task")
	}
	return m, nil
}

// decodeBulk reads a bulk request's body and match (see bulkMatch); for a dry
// run it also counts the matches, returned as matched (nil otherwise).
func (s *Server) decodeBulk(w http.ResponseWriter, r *http.Request, allowed, defaults []wftype.TaskStatus) (
	req wftype.BulkTasksRequest, m store.TaskMatch, matched *int64, err error) {
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return req, m, nil, prob
	}
	m, prob := bulkMatch(req, allowed, defaults)
	if prob != nil {
		return req, m, nil, prob
	}
	if req.DryRun {
		n, err := s.store.CountTasks(r.Context(), m)
		if err != nil {
			return req, m, nil, err
		}
		return req, m, &n, nil
	}
	return req, m, nil, nil
}

func statusList(sts []wftype.TaskStatus) string {
	out := ""
	for i, st := range sts {
		if i > 0 {
			out += ", "
		}
		out += string(st)
	}
	return out
}

// cancelTasks answers POST /admin/tasks/cancel (admin only): the PENDING
// and ACTIVE tasks (status narrows it) that match the filter are
// cancelled, up to limit (default 1000) per call, oldest first; running
// ones are stopped as a single cancel stops them. more says whether more
// match. With dry_run nothing changes and matched counts every match.
func (s *Server) cancelTasks(w http.ResponseWriter, r *http.Request, p *principal) error {
	live := []wftype.TaskStatus{wftype.StatusPending, wftype.StatusActive}
	req, m, n, err := s.decodeBulk(w, r, live, live)
	if err != nil || n != nil {
		if n != nil {
			writeJSON(w, http.StatusOK, bulkCancelView{DryRun: true, Matched: n})
		}
		return err
	}
	res, err := s.store.CancelTasks(r.Context(), m)
	if err != nil {
		return err
	}
	s.log.Info("tasks cancelled in bulk", "by", p.name, "task_type", req.TaskType, "schema_name", req.SchemaName,
		"cancelled", res.Cancelled, "more", res.More)
	writeJSON(w, http.StatusOK, bulkCancelView{Cancelled: res.Cancelled, More: res.More})
	return nil
}

// requeueTasks answers POST /admin/tasks/requeue (admin only): the
// DEAD_LETTER tasks (status may name FAILED and CANCELLED too) that match
// the filter go back to PENDING with their retries reset, up to limit per
// call, oldest first; those whose dedup key a live task now holds are
// skipped and counted. With dry_run nothing changes and matched counts
// every match.
func (s *Server) requeueTasks(w http.ResponseWriter, r *http.Request, p *principal) error {
	req, m, n, err := s.decodeBulk(w, r, []wftype.TaskStatus{wftype.StatusDeadLetter, wftype.StatusFailed, wftype.StatusCancelled},
		[]wftype.TaskStatus{wftype.StatusDeadLetter})
	if err != nil || n != nil {
		if n != nil {
			writeJSON(w, http.StatusOK, bulkRequeueView{Kind: "tasks", DryRun: true, Matched: n})
		}
		return err
	}
	res, err := s.store.RequeueTasks(r.Context(), m)
	if err != nil {
		return err
	}
	s.log.Info("tasks requeued in bulk", "by", p.name, "status", m.Statuses, "task_type", req.TaskType,
		"schema_name", req.SchemaName, "requeued", res.Requeued, "skipped", res.Skipped, "more", res.More)
	writeJSON(w, http.StatusOK, bulkRequeueView{Kind: "tasks", Requeued: res.Requeued, Skipped: res.Skipped, More: res.More})
	return nil
}
