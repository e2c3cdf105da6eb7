package api

import (
	"net/http"

	"github.com/wfhq/wf/engine/store"
)

// collectionListView is a page of a catalog's collections: items and
// next_cursor as every list of the API, and the same collections under
// collections with links (next among them), as OGC API – Features reads
// them.
type collectionListView struct {
	Items       []collectionView `json:"items"`
	NextCursor  string           `json:"next_cursor,omitempty"`
	Collections []collectionView `json:"collections"`
	Links       []link           `json:"links"`
}

// listCollections answers GET /catalogs/{catalog_id}/collections: the
// catalog's collections ordered by id, a page at a time (limit, cursor),
// each with its OGC API members (withOGC).
func (s *Server) listCollections(w http.ResponseWriter, r *http.Request, p *principal) error {
	catalogID, prob := pathCatalog(r, p)
	if prob != nil {
		return prob
	}
	q, prob := parseQuery(r, []string{"limit", "cursor", "f"}, nil)
	if prob != nil {
		return prob
	}
	if prob := checkFormat(q); prob != nil {
		return prob
	}
	page, limit, prob := idPage(q, "collections")
	if prob != nil {
		return prob
	}
	rows, err := s.catalogs.ListCollections(r.Context(), catalogID, page)
	if err != nil {
		return notFoundAs(err, catalogNotFound(catalogID))
	}
	pg := pageOf(rows, limit, newCollectionView, func(last store.Collection) cursor {
		return cursor{Kind: "collections", ID: last.ID}
	})
	for i := range pg.Items {
		if err := s.withOGC(r.Context(), r, &pg.Items[i]); err != nil {
			return notFoundAs(err, catalogNotFound(catalogID))
		}
	}
	base := catalogPath(catalogID) + "/collections"
	out := collectionListView{Items: pg.Items, NextCursor: pg.NextCursor, Collections: pg.Items, Links: []link{
		{Href: s.absURL(r, base), Rel: "self", Type: mediaJSON, Title: "These collections"},
		{Href: s.absURL(r, catalogPath(catalogID)), Rel: "parent", Type: mediaJSON, Title: "The catalog"},
	}}
	if pg.NextCursor != "" {
		out.Links = append(out.Links, link{Href: s.absURL(r, base+"?cursor="+pg.NextCursor+limitParam(q)), Rel: "next", Type: mediaJSON, Title: "The next page"})
	}
	if wantsHTML(r) {
		s.writeHTML(w, r, "Collections of catalog "+catalogID, out)
		return nil
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// limitParam repeats a request's limit in a link ("" when it had none).
func limitParam(q query) string {
	if l := q.get("limit"); l != "" {
		return "&limit=" + l
	}
	return ""
}
