package api

import (
	"net/http"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// deadLettersView answers GET /admin/dead-letters (schema DeadLetterList):
// tasks or events, as kind says.
type deadLettersView struct {
	Kind string `json:"kind"`
	// Items are tasks or events, as Kind says.
	Items      any    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// listDeadLetters answers GET /admin/dead-letters?kind=tasks|events (admin
// only; default tasks): dead letters, most recently dead-lettered first, a
// page at a time (limit, cursor). It reads the partial indexes on dead
// letters only.
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request, p *principal) error {
	q, prob := parseQuery(r, []string{"kind", "limit", "cursor"}, nil)
	if prob != nil {
		return prob
	}
	kind := q.get("kind")
	if kind == "" {
		kind = "tasks"
	}
	if kind != "tasks" && kind != "events" {
		return invalidParameter("kind", "must be tasks or events")
	}
	limit, prob := q.limit(50, 500)
	if prob != nil {
		return prob
	}
	page := store.DeadLetterPage{Limit: limit + 1}
	c, prob := q.cursor("dead-" + kind)
	if prob != nil {
		return prob
	}
	if c != nil {
		id, _, prob := c.uuidOf()
		if prob != nil {
			return prob
		}
		at := c.Time
		page.AfterID, page.AfterTime = id, &at
	}
	out := deadLettersView{Kind: kind}
	if kind == "tasks" {
		rows, err := s.laggingReads(w).ListDeadLetterTasks(r.Context(), page)
		if err != nil {
			return err
		}
		lv := pageOf(rows, limit, func(t wftype.Task) wftype.TaskView { return s.newTaskView(t, p) }, func(last wftype.Task) cursor {
			at := last.Timestamp
			if last.FinishedAt != nil {
				at = *last.FinishedAt
			}
			return cursor{Kind: "dead-tasks", Time: at, ID: last.ID.String()}
		})
		out.Items, out.NextCursor = lv.Items, lv.NextCursor
	} else {
		rows, err := s.laggingReads(w).ListDeadLetterEvents(r.Context(), page)
		if err != nil {
			return err
		}
		lv := pageOf(rows, limit, newEventView, func(last store.Event) cursor {
			at := last.CreatedAt
			if last.DeadLetteredAt != nil {
				at = *last.DeadLetteredAt
			}
			return cursor{Kind: "dead-events", Time: at, ID: last.ID.String()}
		})
		out.Items, out.NextCursor = lv.Items, lv.NextCursor
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
