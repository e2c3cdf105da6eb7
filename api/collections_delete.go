package api

import (
	"errors"
	"net/http"

	"github.com/wfhq/wf/wftype"
)

// deleteCollection answers DELETE
// /catalogs/{catalog_id}/collections/{collection_id}: it deletes the
// collection, emits collection.deleted in the same transaction, and answers 204.
func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
	}
	if _, err := s.catalogs.RemoveCollection(r.Context(), catalogID, id); errors.Is(err, wftype.ErrNotFound) {
		return collectionNotFound(catalogID, id)
	} else if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
