package api

import (
	"encoding/json"
	"net/http"

	"github.com/wfhq/wf/engine/store"
)

// updateAssetRequest is the body of PATCH /catalogs/{catalog_id}/assets/{asset_id}.
type updateAssetRequest struct {
	Status   *string         `json:"status"`
	Kind     *string         `json:"kind"`
	Metadata json.RawMessage `json:"metadata"`
}

// updateAsset answers PATCH /catalogs/{catalog_id}/assets/{asset_id}: it
// changes the status, kind or metadata (merged by top-level key) and emits
// asset.archived, asset.deleted or asset.updated in the same transaction.
func (s *Server) updateAsset(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, id, prob := pathAsset(r, p)
	if prob != nil {
		return prob
	}
	var req updateAssetRequest
	if prob := s.decodeBody(w, r, &req); prob != nil {
		return prob
	}
	a, err := s.catalogs.UpdateAsset(r.Context(), catalogID, id, store.AssetPatch{Status: req.Status, Kind: req.Kind, Metadata: req.Metadata})
	if err != nil {
		return notFoundAs(err, assetNotFound(catalogID, id))
	}
	writeJSON(w, http.StatusOK, newAssetView(a))
	return nil
}
