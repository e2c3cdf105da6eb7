package api

import "net/http"

// deleteCollection answers DELETE
// /catalogs/{catalog_id}/collections/{collection_id}: it deletes the
// collection, emits collection.deleted in the same transaction, and answers 204.
func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	return deleteCatalogItem(w, r, p, pathCollection, collectionNotFound, s.catalogs.RemoveCollection)
}
