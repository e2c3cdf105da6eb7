package api

import (
	"errors"
	"net/http"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// listCollections answers GET /catalogs/{catalog_id}/collections: the
// catalog's collections ordered by id, a page at a time (limit, cursor).
func (s *Server) listCollections(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, prob := pathCatalogID(r, "catalog_id")
	if prob != nil {
		return prob
	}
	if !p.canUseCatalog(catalogID) {
		return catalogNotFound(catalogID)
	}
	q, prob := parseQuery(r, []string{"limit", "cursor"}, nil)
	if prob != nil {
		return prob
	}
	page, limit, prob := idPage(q, "collections")
	if prob != nil {
		return prob
	}
	rows, err := s.catalogs.ListCollections(r.Context(), catalogID, page)
	if errors.Is(err, wftype.ErrNotFound) {
		return catalogNotFound(catalogID)
	}
	if err != nil {
		return err
	}
	out := pageOf(rows, limit, newCollectionView, func(last store.Collection) cursor {
		return cursor{Kind: "collections", ID: last.ID}
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}
