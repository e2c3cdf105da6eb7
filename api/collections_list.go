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
	q, prob := parseQuery(r, []string{"limit", "cursor"}, nil)
	if prob != nil {
		return prob
	}
	page, limit, prob := idPage(q, "collections")
	if prob != nil {
		return prob
	}
	rows, err := s.catalogs.ListCollections(r.Context(), catalogID, page)
	if err != nil {
		return notFoundAs(err, catalogNotFound(catalogID))
	}
	out := pageOf(rows, limit, newCollectionView, func(last store.Collection) cursor {
		return cursor{Kind: "collections", ID: last.ID}
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}
