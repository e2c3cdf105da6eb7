package api

import (
	"net/http"

	"wf/engine/store"
)

// listCatalogs answers GET /catalogs: the catalogs the token may see,
// ordered by id, a page at a time (limit, cursor).
func (s *Server) listCatalogs(w http.ResponseWriter, r *http.Request, p *principal) error {
	q, prob := parseQuery(r, []string{"limit", "cursor"}, nil)
	if prob != nil {
		return prob
	}
	limit, prob := q.limit(100, 500)
	if prob != nil {
		return prob
	}
	page := store.Page{Limit: limit + 1}
	if c, prob := q.cursor("catalogs"); prob != nil {
		return prob
	} else if c != nil {
		page.After = c.ID
	}
	var ids []string
	if p.limited() {
		ids = p.catalogs
	}
	rows, err := s.catalogs.List(r.Context(), ids, page)
	if err != nil {
		return err
	}
	out := listView[catalogView]{Items: []catalogView{}}
	for i, c := range rows {
		if i == limit {
			out.NextCursor = cursor{Kind: "catalogs", ID: rows[i-1].ID}.encode()
			break
		}
		out.Items = append(out.Items, newCatalogView(c))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
