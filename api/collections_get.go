package api

import "net/http"

// getCollection answers GET /catalogs/{catalog_id}/collections/{collection_id}.
func (s *Server) getCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
	}
	c, err := s.catalogs.GetCollection(r.Context(), catalogID, id)
	if err != nil {
		return notFoundAs(err, collectionNotFound(catalogID, id))
	}
	writeJSON(w, http.StatusOK, newCollectionView(c))
	return nil
}
