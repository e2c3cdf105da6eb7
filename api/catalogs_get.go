package api

import "net/http"

// getCatalog answers GET /catalogs/{catalog_id}. A catalog the token may not
// see answers 404, as one that does not exist.
func (s *Server) getCatalog(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	c, err := s.catalogs.Get(r.Context(), id)
	if err != nil {
		return notFoundAs(err, catalogNotFound(id))
	}
	writeJSON(w, http.StatusOK, newCatalogView(c))
	return nil
}

// catalogNotFound is the one answer for a catalog that does not exist and
// for one the token may not see.
func catalogNotFound(id string) *problem { return notFound("no catalog %q", id) }

// collectionNotFound is catalogNotFound for a collection.
func collectionNotFound(catalogID, id string) *problem {
	return notFound("no collection %q in catalog %q", id, catalogID)
}
