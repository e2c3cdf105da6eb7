package api

import (
	"net/http"
	"slices"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// listTasks answers GET /tasks: tasks newest first, filtered by status,
// task_type and schema_name (each repeatable or comma-separated) and by
// creation time (created_from inclusive, created_to exclusive), a page at a
// time: pass next_cursor back as cursor. A token limited to catalogs sees
// only their tenants' tasks, and a worker token limited to task types only
// those types' tasks, whatever it asks for.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request, p *principal) error {
	q, prob := parseQuery(r, []string{"limit", "cursor", "created_from", "created_to"}, []string{"status", "task_type", "schema_name"})
	if prob != nil {
		return prob
	}
	limit, prob := q.limit(50, 500)
	if prob != nil {
		return prob
	}
	f := store.TaskFilter{TaskTypes: q.list("task_type"), SchemaNames: q.list("schema_name"), Limit: limit + 1}
	for _, st := range q.list("status") {
		switch ts := wftype.TaskStatus(st); ts {
		case wftype.StatusPending, wftype.StatusActive, wftype.StatusCompleted, wftype.StatusFailed,
			wftype.StatusDeadLetter, wftype.StatusCancelled:
			f.Statuses = append(f.Statuses, ts)
		default:
			return invalidParameter("status", "must be PENDING, ACTIVE, COMPLETED, FAILED, DEAD_LETTER or CANCELLED")
		}
	}
	if f.From, prob = q.time("created_from"); prob != nil {
		return prob
	}
	if f.To, prob = q.time("created_to"); prob != nil {
		return prob
	}
	c, prob := q.cursor("tasks")
	if prob != nil {
		return prob
	}
	if c != nil {
		if f.AfterID, f.AfterTime, prob = c.uuidOf(); prob != nil {
			return prob
		}
	}
	sc, err := s.scopeOf(r.Context(), p)
	if err != nil {
		return err
	}
	if !sc.all {
		if len(f.SchemaNames) == 0 {
			f.SchemaNames = sc.schemas
		} else {
			f.SchemaNames = slices.DeleteFunc(f.SchemaNames, func(n string) bool { return !sc.has(n) })
		}
		if len(f.SchemaNames) == 0 {
			writeJSON(w, http.StatusOK, wftype.Page[wftype.TaskView]{Items: []wftype.TaskView{}})
			return nil
		}
	}
	if len(p.taskTypes) > 0 {
		// A worker token limited to task types sees only those types'
		// tasks, as GET /tasks/{id} shows it only those.
		if len(f.TaskTypes) == 0 {
			f.TaskTypes = slices.Clone(p.taskTypes)
		} else {
			f.TaskTypes = slices.DeleteFunc(f.TaskTypes, func(n string) bool { return !slices.Contains(p.taskTypes, n) })
		}
		if len(f.TaskTypes) == 0 {
			writeJSON(w, http.StatusOK, wftype.Page[wftype.TaskView]{Items: []wftype.TaskView{}})
			return nil
		}
	}
	rows, err := s.laggingReads(w).ListTasks(r.Context(), f)
	if err != nil {
		return err
	}
	out := pageOf(rows, limit, func(t wftype.Task) wftype.TaskView { return s.newTaskView(t, p) }, func(last wftype.Task) cursor {
		return cursor{Kind: "tasks", ID: last.ID.String()}
	})
	if err := s.withWaitingReasons(r.Context(), rows[:len(out.Items)], out.Items); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
