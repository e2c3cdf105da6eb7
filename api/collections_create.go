package api

import (
	"encoding/json"
	"net/http"

	"github.com/wfhq/wf/catalog/registry"
)

// createCollectionRequest is the body of POST /catalogs/{catalog_id}/collections.
type createCollectionRequest struct {
	CollectionID string          `json:"collection_id"`
	Title        *string         `json:"title"`
	LayerConfig  json.RawMessage `json:"layer_config"`
}

// createCollection answers POST /catalogs/{catalog_id}/collections: it adds
// a collection with its layer configuration, emits collection.created, and
// answers 201.
func (s *Server) createCollection(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	var req createCollectionRequest
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	c, err := s.catalogs.AddCollection(r.Context(), registry.NewCollection{
		CatalogID: catalogID, ID: req.CollectionID, Title: req.Title, LayerConfig: req.LayerConfig,
	})
	if err != nil {
		return notFoundAs(err, catalogNotFound(catalogID))
	}
	s.writeCreated(w, "/catalogs/"+c.CatalogID+"/collections/"+c.ID, newCollectionView(c))
	return nil
}
