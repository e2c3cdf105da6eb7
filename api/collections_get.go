package api

import "net/http"

// getCollection answers GET /catalogs/{catalog_id}/collections/{collection_id}:
// the collection with its OGC API – Features members (links to its items,
// extent, itemCount, CRSs). Another tenant's collection answers 404.
func (s *Server) getCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
	}
	q, prob := parseQuery(r, []string{"f"}, nil)
	if prob != nil {
		return prob
	}
	if prob := checkFormat(q); prob != nil {
		return prob
	}
	c, err := s.catalogs.GetCollection(r.Context(), catalogID, id)
	if err != nil {
		return notFoundAs(err, collectionNotFound(catalogID, id))
	}
	v := newCollectionView(c)
	if err := s.withOGC(r.Context(), r, &v); err != nil {
		return notFoundAs(err, collectionNotFound(catalogID, id))
	}
	if wantsHTML(r) {
		s.writeHTML(w, r, "Collection "+id+" of catalog "+catalogID, v)
		return nil
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
