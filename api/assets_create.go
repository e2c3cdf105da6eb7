package api

import (
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
	Kind         string          `json:"kind"`
	Metadata     json.RawMessage `json:"metadata"`
}

// createAsset answers POST /catalogs/{catalog_id}/assets: it registers an
// asset of the catalog, emits asset.created, and answers 201.
func (s *Server) createAsset(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	var req createAssetRequest
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	a, err := s.catalogs.AddAsset(r.Context(), store.NewAsset{
		CatalogID: catalogID, ID: req.AssetID, CollectionID: req.CollectionID, URI: req.URI, Kind: req.Kind, Metadata: req.Metadata,
	})
	if errors.Is(err, wftype.ErrNotFound) {
		if req.CollectionID != nil {
			return notFound("no catalog %q, or no collection %q in it", catalogID, *req.CollectionID)
		}
		return catalogNotFound(catalogID)
	}
	if err != nil {
		return err
	}
	s.writeCreated(w, "/catalogs/"+a.CatalogID+"/assets/"+a.ID, newAssetView(a))
	return nil
}
