package api

import "net/http"

// deleteAsset answers DELETE /catalogs/{catalog_id}/assets/{asset_id}: the
// asset's status becomes deleted (its record stays, as the feature versions
// naming it do), asset.deleted is emitted, and it answers 204.
func (s *Server) deleteAsset(w http.ResponseWriter, r *http.Request, p *principal) error {
	return deleteCatalogItem(w, r, p, pathAsset, assetNotFound, s.catalogs.RemoveAsset)
}
