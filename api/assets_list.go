package api

import (
	"net/http"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/store"
)

// listAssets answers GET /catalogs/{catalog_id}/assets: the catalog's
// assets ordered by id, a page at a time (limit, cursor), active and
// archived unless status names others, optionally of one collection.
func (s *Server) listAssets(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	return listByID(w, r, "assets", []string{"collection_id"}, []string{"status"}, func(q query, page store.Page) ([]store.Asset, error) {
		f := store.AssetFilter{Status: q.list("status"), CollectionID: q.get("collection_id")}
		if f.CollectionID != "" && !registry.ValidID(f.CollectionID) {
			return nil, invalidParameter("collection_id", "must be %s", registry.IDRule)
		}
		for _, st := range f.Status {
			switch st {
			case store.AssetActive, store.AssetArchived, store.AssetDeleted:
			default:
				return nil, invalidParameter("status", "must be one of active, archived, deleted; got %q", st)
			}
		}
		rows, err := s.catalogs.ListAssets(r.Context(), catalogID, f, page)
		return rows, notFoundAs(err, catalogNotFound(catalogID))
	}, newAssetView, func(a store.Asset) string { return a.ID })
}
