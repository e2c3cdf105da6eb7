package api

import "net/http"

// deleteCollection answers DELETE
// /catalogs/{catalog_id}/collections/{collection_id}: it deletes the
// collection, emits collection.deleted in the same transaction, and answers 204.
func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
	}
	if _, err := s.catalogs.RemoveCollection(r.Context(), catalogID, id); err != nil {
		return notFoundAs(err, collectionNotFound(catalogID, id))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
