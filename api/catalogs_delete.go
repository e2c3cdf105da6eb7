package api

import (
	"errors"
	"net/http"

	"github.com/wfhq/wf/wftype"
)

// deleteCatalog answers DELETE /catalogs/{catalog_id}: it deletes the
// catalog and its collections, emits catalog.deleted in the same
// transaction, and answers 204. The catalog's live tasks are dead-lettered by
// the janitor (their tenant is gone).
func (s *Server) deleteCatalog(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathCatalogID(r, "catalog_id")
	if prob != nil {
		return prob
	}
	if !p.canUseCatalog(id) {
		return catalogNotFound(id)
	}
	if _, err := s.catalogs.Delete(r.Context(), id); errors.Is(err, wftype.ErrNotFound) {
		return catalogNotFound(id)
	} else if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
