package api

import (
	"net/http"

	"github.com/wfhq/wf/engine/store"
)

// listCollections answers GET /catalogs/{catalog_id}/collections: the
// catalog's collections ordered by id, a page at a time (limit, cursor).
func (s *Server) listCollections(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	return listByID(w, r, "collections", nil, nil, func(_ query, page store.Page) ([]store.Collection, error) {
		rows, err := s.catalogs.ListCollections(r.Context(), catalogID, page)
		return rows, notFoundAs(err, catalogNotFound(catalogID))
	}, newCollectionView, func(c store.Collection) string { return c.ID })
}
