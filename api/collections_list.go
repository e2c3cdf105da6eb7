package api

import (
	"errors"
	"net/http"

	"wf/engine/store"
	"wf/engine/wftype"
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
	limit, prob := q.limit(100, 500)
	if prob != nil {
		return prob
	}
	page := store.Page{Limit: limit + 1}
	if c, prob := q.cursor("collections"); prob != nil {
		return prob
	} else if c != nil {
		page.After = c.ID
	}
	rows, err := s.catalogs.ListCollections(r.Context(), catalogID, page)
	if errors.Is(err, wftype.ErrNotFound) {
		return catalogNotFound(catalogID)
	}
	if err != nil {
		return err
	}
	out := listView[collectionView]{Items: []collectionView{}}
	for i, c := range rows {
		if i == limit {
			out.NextCursor = cursor{Kind: "collections", ID: rows[i-1].ID}.encode()
			break
		}
		out.Items = append(out.Items, newCollectionView(c))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
