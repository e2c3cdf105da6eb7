package api

import (
	"net/http"

	"github.com/wfhq/wf/catalog/registry"
)

// getAsset answers GET /catalogs/{catalog_id}/assets/{asset_id}.
func (s *Server) getAsset(w http.ResponseWriter, r *http.Request, p *principal) error {
	return getCatalogItem(w, r, p, pathAsset, assetNotFound, s.catalogs.GetAsset, newAssetView)
}

// assetNotFound is catalogNotFound for an asset.
func assetNotFound(catalogID, id string) *problem {
	return notFound("no asset %q in catalog %q", id, catalogID)
}

// pathAsset parses the catalog_id and asset_id path parameters of an asset
// the token may use: one it may not see is not found.
func pathAsset(r *http.Request, p *principal) (catalogID, id string, prob *problem) {
	if catalogID, prob = pathCatalogID(r, "catalog_id"); prob != nil {
		return "", "", prob
	}
	id = r.PathValue("asset_id")
	if !registry.ValidAssetID(id) {
		return "", "", invalidParameter("asset_id", "must be %s", registry.AssetIDRule)
	}
	if !p.canUseCatalog(catalogID) {
		return "", "", assetNotFound(catalogID, id)
	}
	return catalogID, id, nil
}
