package api

import (
	"net/http"
	"strconv"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// listTaskRecords answers GET /tasks/{task_id}/records: the per-record
// envelopes the database reporter kept for the task (the first 100 of each
// outcome of its last run that reported records), by record number, a page
// at a time (limit, default 50, at most 500; pass next_cursor back as
// cursor), optionally of some outcomes only (status, repeatable: SUCCESS,
// REJECTED, FAILED). Who may read the task may read its records: a task of
// a tenant or type the token may not see answers 404, as a missing one.
// URLs in the envelopes have their credentials redacted.
func (s *Server) listTaskRecords(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathTaskID(r, "task_id")
	if prob != nil {
		return prob
	}
	q, prob := parseQuery(r, []string{"limit", "cursor"}, []string{"status"})
	if prob != nil {
		return prob
	}
	limit, prob := q.limit(50, 500)
	if prob != nil {
		return prob
	}
	params := store.ReportRecordsParams{Limit: limit + 1}
	for _, st := range q.list("status") {
		if !reporters.RecordStatus(st).Valid() {
			return invalidParameter("status", "must be SUCCESS, REJECTED or FAILED")
		}
		params.Statuses = append(params.Statuses, st)
	}
	c, prob := q.cursor("records")
	if prob != nil {
		return prob
	}
	if c != nil {
		n, err := strconv.ParseInt(c.ID, 10, 64)
		if err != nil || n < 0 {
			return invalidParameter("cursor", "is not a cursor of this list; pass next_cursor from the previous page unchanged")
		}
		params.After = n
	}
	if _, err := s.visibleTask(r.Context(), p, id); err != nil {
		return err
	}
	rows, err := s.store.ReportRecords(r.Context(), id.UUID, params)
	if err != nil {
		return s.taskNotFound(id, err)
	}
	out := pageOf(rows, limit, func(rec store.ReportRecord) wftype.ReportRecordView {
		return wftype.ReportRecordView{N: rec.N, Status: rec.Status, Envelope: redact.JSON(rec.Envelope), Truncated: rec.Truncated}
	}, func(last store.ReportRecord) cursor {
		return cursor{Kind: "records", ID: strconv.FormatInt(last.N, 10)}
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}
