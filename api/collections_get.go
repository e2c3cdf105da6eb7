package api

import (
	"errors"
	"net/http"

	"github.com/wfhq/wf/wftype"
)

// getCollection answers GET /catalogs/{catalog_id}/collections/{collection_id}.
func (s *Server) getCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
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
