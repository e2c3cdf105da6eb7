package api

import (
	"net/http"

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
	q, prob := parseQuery(r, []string{"limit", "cursor", "collection_id"}, []string{"status"})
	if prob != nil {
		return prob
	}
	page, limit, prob := idPage(q, "assets")
	if prob != nil {
		return prob
	}
	f := store.AssetFilter{Status: q.list("status"), CollectionID: q.get("collection_id")}
	for _, st := range f.Status {
		switch st {
		case store.AssetActive, store.AssetArchived, store.AssetDeleted:
		default:
			return invalidParameter("status", "must be one of active, archived, deleted; got %q", st)
		}
	}
	rows, err := s.catalogs.ListAssets(r.Context(), catalogID, f, page)
	if err != nil {
		return notFoundAs(err, catalogNotFound(catalogID))
	}
	out := pageOf(rows, limit, newAssetView, func(last store.Asset) cursor {
		return cursor{Kind: "assets", ID: last.ID}
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}
