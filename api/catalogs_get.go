package api

import "net/http"

// getCatalog answers GET /catalogs/{catalog_id}: the catalog, and its OGC
// API – Features landing page (links to the API's description, the
// conformance declaration and the collections). A catalog the token may
// not see answers 404, as one that does not exist.
func (s *Server) getCatalog(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	c, err := s.catalogs.Get(r.Context(), id)
	if err != nil {
		return notFoundAs(err, catalogNotFound(id))
	}
	v := newCatalogView(c)
	base := catalogPath(id)
	v.Links = []link{
		{Href: s.absURL(r, base), Rel: "self", Type: mediaJSON, Title: "This catalog"},
		{Href: s.absURL(r, "/openapi.json"), Rel: "service-desc", Type: mediaOpenAPI, Title: "The API's OpenAPI document"},
		{Href: s.absURL(r, base+"/conformance"), Rel: "conformance", Type: mediaJSON, Title: "The OGC API conformance classes it implements"},
		{Href: s.absURL(r, base+"/collections"), Rel: "data", Type: mediaJSON, Title: "Its collections"},
	}
	if wantsHTML(r) {
		s.writeHTML(w, r, "Catalog "+id, v)
		return nil
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// catalogNotFound is the one answer for a catalog that does not exist and
// for one the token may not see.
func catalogNotFound(id string) *problem { return notFound("no catalog %q", id) }

// collectionNotFound is catalogNotFound for a collection.
func collectionNotFound(catalogID, id string) *problem {
	return notFound("no collection %q in catalog %q", id, catalogID)
}
