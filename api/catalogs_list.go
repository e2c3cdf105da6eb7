package api

import (
	"net/http"

	"github.com/wfhq/wf/engine/store"
)

// listCatalogs answers GET /catalogs: the catalogs the token may see,
// ordered by id, a page at a time (limit, cursor).
func (s *Server) listCatalogs(w http.ResponseWriter, r *http.Request, p *principal) error {
	var ids []string
	if p.limited() {
		ids = p.catalogs
	}
	return listByID(w, r, "catalogs", nil, nil, func(_ query, page store.Page) ([]store.Catalog, error) {
		return s.catalogs.List(r.Context(), ids, page)
	}, newCatalogView, func(c store.Catalog) string { return c.ID })
}
