package api

import "net/http"

// deleteCatalog answers DELETE /catalogs/{catalog_id}: it deletes the
// catalog and its collections, emits catalog.deleted in the same
// transaction, and answers 204. The catalog's live tasks are dead-lettered by
// the janitor (their tenant is gone).
func (s *Server) deleteCatalog(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	if _, err := s.catalogs.Delete(r.Context(), id); err != nil {
		return notFoundAs(err, catalogNotFound(id))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
