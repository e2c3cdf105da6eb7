package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wfhq/wf/catalog/ogcapi"
	"github.com/wfhq/wf/engine/store"
)

// OGC API – Features over a catalog: /catalogs/{catalog_id} is the landing
// page, its collections the feature collections. This file holds what the
// operations share (links, the collection's OGC members, the format
// parameter); each operation has its file (catalogs_get.go,
// ogc_conformance.go, collections_*.go, features_*.go).

// Media types of OGC API answers.
const (
	mediaGeoJSON = "application/geo+json"
	mediaJSON    = "application/json"
	mediaHTML    = "text/html"
	mediaOpenAPI = "application/vnd.oai.openapi+json;version=3.1"
)

// link is a link of an OGC API resource.
type link struct {
	Href  string `json:"href"`
	Rel   string `json:"rel"`
	Type  string `json:"type,omitempty"`
	Title string `json:"title,omitempty"`
}

// absURL returns the absolute URL of path (with query): under BaseURL when
// set, else on the host the request was sent to. OGC API clients (GDAL
// among them) follow links as given, so they are never relative.
func (s *Server) absURL(r *http.Request, path string) string {
	if s.cfg.BaseURL != "" {
		return s.cfg.BaseURL + path
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}

// catalogPath is the path of a catalog's landing page.
func catalogPath(catalogID string) string { return "/catalogs/" + url.PathEscape(catalogID) }

// collectionPath is the path of a collection.
func collectionPath(catalogID, collectionID string) string {
	return catalogPath(catalogID) + "/collections/" + url.PathEscape(collectionID)
}

// extentView is a collection's extent: spatial in CRS84, temporal over
// the validity of its features' versions.
type extentView struct {
	Spatial  spatialExtent  `json:"spatial"`
	Temporal temporalExtent `json:"temporal"`
}

type spatialExtent struct {
	BBox [][]float64 `json:"bbox"`
	CRS  string      `json:"crs"`
}

type temporalExtent struct {
	Interval [][]*time.Time `json:"interval"`
	TRS      string         `json:"trs"`
}

// withOGC adds a collection's OGC API members to its view: id, links,
// extent, itemCount and the CRSs its items can be read in.
func (s *Server) withOGC(ctx context.Context, r *http.Request, v *collectionView) error {
	t, err := ogcapi.New(s.store.Catalog()).Table(ctx, v.CatalogID, v.CollectionID)
	if err != nil {
		return err
	}
	sum, err := ogcapi.New(s.store.Catalog()).Summary(ctx, t)
	if err != nil {
		return err
	}
	base := collectionPath(v.CatalogID, v.CollectionID)
	v.ID = v.CollectionID
	v.ItemType = "feature"
	v.Links = []link{
		{Href: s.absURL(r, base), Rel: "self", Type: mediaJSON, Title: "This collection"},
		{Href: s.absURL(r, base+"/items"), Rel: "items", Type: mediaGeoJSON, Title: "Its features"},
		{Href: s.absURL(r, base+"/queryables"), Rel: "http://www.opengis.net/def/rel/ogc/1.0/queryables", Type: "application/schema+json", Title: "What a filter may name"},
		{Href: s.absURL(r, catalogPath(v.CatalogID)), Rel: "parent", Type: mediaJSON, Title: "The catalog"},
	}
	bbox := [][]float64{{-180, -90, 180, 90}}
	if sum.BBox != nil {
		bbox = [][]float64{sum.BBox}
	}
	v.Extent = &extentView{
		Spatial:  spatialExtent{BBox: bbox, CRS: ogcapi.CRS84URI},
		Temporal: temporalExtent{Interval: [][]*time.Time{{sum.First, sum.Last}}, TRS: "http://www.opengis.net/def/uom/ISO-8601/0/Gregorian"},
	}
	if !sum.Estimated { // a large collection's count is not cheap: absent
		n := sum.Count
		v.ItemCount = &n
	}
	crss, err := ogcapi.New(s.store.Catalog()).CRSList(ctx, v.CatalogID, v.CollectionID)
	if err != nil {
		return err
	}
	for _, c := range crss {
		v.CRS = append(v.CRS, c.URI)
	}
	v.StorageCRS = ogcapi.CRS84URI
	return nil
}

// ogcProblem turns an ogcapi error into the answer: a refused parameter is
// 400 naming it, anything else is returned as it is.
func ogcProblem(err error) error {
	var pe *ogcapi.ParamError
	if errors.As(err, &pe) {
		return invalidParameter(pe.Param, "%s", pe.Message)
	}
	return err
}

// checkFormat reads the f parameter of an OGC API route: json (or
// geojson; absent means json, unless a browser asks for HTML) or html
// (wantsHTML).
func checkFormat(q query) *problem {
	switch strings.ToLower(q.get("f")) {
	case "", "json", "geojson", "html":
		return nil
	}
	return invalidParameter("f", "is json, geojson or html, got %q", q.get("f"))
}

// pageLink returns the link of the page after (rel next) or before
// (rel prev) key k: the request's query with the cursor replaced.
func (s *Server) pageLink(r *http.Request, rel string, k *store.FeatureKey) link {
	q := r.URL.Query()
	q.Del("after")
	q.Del("before")
	if rel == "next" {
		q.Set("after", ogcapi.EncodeKey(*k))
	} else {
		q.Set("before", ogcapi.EncodeKey(*k))
	}
	title := map[string]string{"next": "The next page", "prev": "The previous page"}[rel]
	return link{Href: s.absURL(r, r.URL.Path+"?"+q.Encode()), Rel: rel, Type: mediaGeoJSON, Title: title}
}

// itemsRequest reads the query of an items request (the parameters names),
// checks its format and finds the collection's feature table: what both
// items routes do before they read features.
func (s *Server) itemsRequest(r *http.Request, catalogID, collectionID string, names []string) (query, *ogcapi.Reader, store.FeatureTable, error) {
	q, prob := parseQuery(r, names, nil)
	if prob != nil {
		return q, nil, store.FeatureTable{}, prob
	}
	if prob := checkFormat(q); prob != nil {
		return q, nil, store.FeatureTable{}, prob
	}
	reader := ogcapi.New(s.store.Catalog())
	t, err := reader.Table(r.Context(), catalogID, collectionID)
	if err != nil {
		return q, nil, t, notFoundAs(err, collectionNotFound(catalogID, collectionID))
	}
	return q, reader, t, nil
}
