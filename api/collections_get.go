package api

import "net/http"

// getCollection answers GET /catalogs/{catalog_id}/collections/{collection_id}.
func (s *Server) getCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	return getCatalogItem(w, r, p, pathCollection, collectionNotFound, s.catalogs.GetCollection, newCollectionView)
}
