package api

import (
	"net/http"

	"github.com/wfhq/wf/catalog/ogcapi"
)

// getConformance answers GET /catalogs/{catalog_id}/conformance: the OGC
// API conformance classes a catalog implements (ogcapi.Conformance). A
// catalog the token may not see answers 404, as one that does not exist.
func (s *Server) getConformance(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	if _, err := s.catalogs.Get(r.Context(), id); err != nil {
		return notFoundAs(err, catalogNotFound(id))
	}
	v := map[string][]string{"conformsTo": ogcapi.Conformance()}
	if wantsHTML(r) {
		s.writeHTML(w, r, "Conformance of catalog "+id, v)
		return nil
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
