package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/store"
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
	return createCatalogItem(s, w, r, p, func(ctx context.Context, catalogID string, req *createCollectionRequest) (store.Collection, error) {
		c, err := s.catalogs.AddCollection(ctx, registry.NewCollection{
			CatalogID: catalogID, ID: req.CollectionID, Title: req.Title, LayerConfig: req.LayerConfig,
		})
		return c, notFoundAs(err, catalogNotFound(catalogID))
	}, func(c store.Collection) (string, any) {
		return "/catalogs/" + c.CatalogID + "/collections/" + c.ID, newCollectionView(c)
	})
}
