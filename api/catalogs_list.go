package api

import (
	"net/http"

	"github.com/wfhq/wf/engine/store"
)

// listCatalogs answers GET /catalogs: the catalogs the token may see,
// ordered by id, a page at a time (limit, cursor).
func (s *Server) listCatalogs(w http.ResponseWriter, r *http.Request, p *principal) error {
	q, prob := parseQuery(r, []string{"limit", "cursor"}, nil)
	if prob != nil {
		return prob
	}
	page, limit, prob := idPage(q, "catalogs")
	if prob != nil {
		return prob
	}
	var ids []string
	if p.limited() {
		ids = p.catalogs
	}
	rows, err := s.catalogs.List(r.Context(), ids, page)
	if err != nil {
		return err
	}
	out := pageOf(rows, limit, newCatalogView, func(last store.Catalog) cursor {
		return cursor{Kind: "catalogs", ID: last.ID}
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}
