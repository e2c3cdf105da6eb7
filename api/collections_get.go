package api

import (
	"errors"
	"net/http"

	"wf/engine/wftype"
)

// getCollection answers GET /catalogs/{catalog_id}/collections/{collection_id}.
func (s *Server) getCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, prob := pathCatalogID(r, "catalog_id")
	if prob != nil {
		return prob
	}
	id, prob := pathCatalogID(r, "collection_id")
	if prob != nil {
		return prob
	}
	if !p.canUseCatalog(catalogID) {
		return collectionNotFound(catalogID, id)
	}
	c, err := s.catalogs.GetCollection(r.Context(), catalogID, id)
	if errors.Is(err, wftype.ErrNotFound) {
		return collectionNotFound(catalogID, id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newCollectionView(c))
	return nil
}
