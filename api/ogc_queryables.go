package api

import (
	"net/http"

	"github.com/wfhq/wf/catalog/ogcapi"
)

// getQueryables answers GET /catalogs/{catalog_id}/collections/{collection_id}/queryables:
// the JSON Schema of what a CQL2 filter may name: the geometry, and any
// property of the features (their properties are free-form, so the schema
// is open). Another tenant's collection answers 404.
func (s *Server) getQueryables(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathCollection(r, p)
	if prob != nil {
		return prob
	}
	if _, err := ogcapi.New(s.store.Catalog()).Table(r.Context(), catalogID, id); err != nil {
		return notFoundAs(err, collectionNotFound(catalogID, id))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id":     s.absURL(r, collectionPath(catalogID, id)+"/queryables"),
		"type":    "object",
		"title":   id,
		"properties": map[string]any{
			"geometry": map[string]any{"format": "geometry-any", "description": "The feature's geometry, in CRS84."},
		},
		"additionalProperties": true,
	})
	return nil
}
