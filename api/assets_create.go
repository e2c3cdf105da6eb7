package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// createAssetRequest is the body of POST /catalogs/{catalog_id}/assets.
type createAssetRequest struct {
	AssetID      string          `json:"asset_id"`
	CollectionID *string         `json:"collection_id"`
	URI          string          `json:"uri"`
	Kind         string          `json:"kind" wf:"nonempty"`
	Metadata     json.RawMessage `json:"metadata"`
}

// createAsset answers POST /catalogs/{catalog_id}/assets: it registers an
// asset of the catalog, emits asset.created, and answers 201.
func (s *Server) createAsset(w http.ResponseWriter, r *http.Request, p *principal) error {
	return createCatalogItem(s, w, r, p, func(ctx context.Context, catalogID string, req *createAssetRequest) (store.Asset, error) {
		a, err := s.catalogs.AddAsset(ctx, store.NewAsset{
			CatalogID: catalogID, ID: req.AssetID, CollectionID: req.CollectionID, URI: req.URI, Kind: req.Kind, Metadata: req.Metadata,
		})
		if errors.Is(err, wftype.ErrNotFound) {
			if req.CollectionID != nil {
				return a, notFound("no catalog %q, or no collection %q in it", catalogID, *req.CollectionID)
			}
			return a, catalogNotFound(catalogID)
		}
		return a, err
	}, func(a store.Asset) (string, any) {
		return "/catalogs/" + a.CatalogID + "/assets/" + a.ID, newAssetView(a)
	})
}
