// Package ogcapi is the read side of a catalog as OGC API – Features: it
// turns the standard's query parameters (bbox, datetime, limit and the
// keyset cursors, properties, crs and bbox-crs, filter in CQL2) into a
// store.FeatureQuery, and reads pages and summaries of a collection's
// features through the store (where the SQL is). The HTTP operations are
// in api/ (one file each); this package knows nothing of HTTP.
package ogcapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// The conformance classes wf implements, each covered by tests (api's
// ogcapi tests and GDAL's OAPIF driver reading a catalog).
const (
	ConfCore     = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"
	ConfGeoJSON  = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson"
	ConfHTML     = "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html"
	ConfCRS      = "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs"
	ConfFilter   = "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter"
	ConfFeatures = "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter"
	ConfQueryabl = "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables"
	ConfCQL2Text = "http://www.opengis.net/spec/cql2/1.0/conf/cql2-text"
	ConfCQL2JSON = "http://www.opengis.net/spec/cql2/1.0/conf/cql2-json"
	ConfBasic    = "http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2"
	ConfSpatial  = "http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions"
	ConfSpatialF = "http://www.opengis.net/spec/cql2/1.0/conf/spatial-functions"
)

// Conformance lists the classes a catalog declares at /conformance.
func Conformance() []string {
	// Not oas30: wf's document is OpenAPI 3.1.
	return []string{ConfCore, ConfGeoJSON, ConfHTML, ConfCRS, ConfFilter, ConfFeatures, ConfQueryabl,
		ConfCQL2Text, ConfCQL2JSON, ConfBasic, ConfSpatial, ConfSpatialF}
}

// DefaultLimit and MaxLimit bound a page of items.
const (
	DefaultLimit = 100
	MaxLimit     = 10000
)

// CRS is a coordinate reference system a request may name.
type CRS struct {
	// URI is its OGC URI, as the standard writes it.
	URI string
	// SRID is its EPSG code (4326 for CRS84 too).
	SRID int
	// LatFirst says its first axis is latitude (EPSG:4326), so coordinates
	// are swapped from PostGIS's longitude-first order.
	LatFirst bool
}

// The CRS URIs of the standard.
const (
	CRS84URI   = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
	epsgPrefix = "http://www.opengis.net/def/crs/EPSG/0/"
)

// CRS84 is WGS84 longitude, latitude: what wf stores and answers by default.
var CRS84 = CRS{URI: CRS84URI, SRID: 4326}

// EPSG returns the CRS of an EPSG code.
func EPSG(code int) CRS {
	return CRS{URI: epsgPrefix + strconv.Itoa(code), SRID: code, LatFirst: code == 4326}
}

// ListedCRS are the CRSs every collection lists: CRS84, EPSG:4326 and Web
// Mercator; Reader.CRSList adds the CRSs its sources were in.
var ListedCRS = []CRS{CRS84, EPSG(4326), EPSG(3857)}

// ParamError is a refused query parameter.
type ParamError struct {
	Param   string
	Message string
}

// Error implements error.
func (e *ParamError) Error() string { return e.Param + ": " + e.Message }

// paramErr returns a ParamError.
func paramErr(param, format string, args ...any) *ParamError {
	return &ParamError{Param: param, Message: fmt.Sprintf(format, args...)}
}

// Reader reads a catalog's collections as OGC API – Features.
type Reader struct {
	store *store.Store
}

// New returns a Reader on the catalog's store.
func New(st *store.Store) *Reader { return &Reader{store: st} }

// Table returns the feature table of a registered collection; it fails
// with wftype.ErrNotFound when the catalog or collection does not exist.
func (r *Reader) Table(ctx context.Context, catalogID, collectionID string) (store.FeatureTable, error) {
	t, err := r.store.ResolveFeatureTable(ctx, catalogID, collectionID)
	if errors.Is(err, store.ErrInvalidFeatureTable) {
		return t, fmt.Errorf("collection %q of catalog %q: %w", collectionID, catalogID, wftype.ErrNotFound)
	}
	return t, err
}

// SummaryExactRows is how many rows a feature table may have (by the
// planner's count) for its summary to be read whole: count, extent and
// validity bounds; a larger one's is estimated (no count, the planner's
// extent), so listing collections stays cheap.
const SummaryExactRows = 1_000_000

// Summary returns the count and extents of a collection's features
// (estimated past SummaryExactRows, see store.SummarizeFeatures).
func (r *Reader) Summary(ctx context.Context, t store.FeatureTable) (store.FeatureSummary, error) {
	return r.store.SummarizeFeatures(ctx, t, SummaryExactRows)
}

// Items reads the page of t that q selects, handing each feature to fn
// as it arrives (see store.QueryFeatures). A query PostgreSQL refuses for
// its values (a geometry PostGIS cannot read) is a ParamError of "filter".
func (r *Reader) Items(ctx context.Context, t store.FeatureTable, q store.FeatureQuery, fn func(*store.FeatureOut) error) (store.FeaturePage, error) {
	page, err := r.store.QueryFeatures(ctx, t, q, fn)
	if errors.Is(err, store.ErrInvalidFeatureQuery) {
		return page, paramErr("filter", "%s", strings.TrimPrefix(err.Error(), store.ErrInvalidFeatureQuery.Error()+": "))
	}
	return page, err
}

// ParseCRS reads a CRS parameter: an OGC URI (CRS84, EPSG/0/code), its
// safe CURIE ([OGC:CRS84], [EPSG:code]) or EPSG:code. An EPSG code must be
// one PostGIS knows.
func (r *Reader) ParseCRS(ctx context.Context, param, raw string) (CRS, error) {
	s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(raw), "["), "]")
	switch s {
	case CRS84URI, "OGC:CRS84", "CRS84":
		return CRS84, nil
	}
	code := ""
	for _, prefix := range []string{epsgPrefix, "EPSG:", "epsg:"} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			code = rest
			break
		}
	}
	n, err := strconv.Atoi(code)
	if err != nil || n <= 0 || code != strconv.Itoa(n) {
		return CRS{}, paramErr(param, "%q is not a CRS wf knows: give %s or %sCODE with an EPSG code", raw, CRS84URI, epsgPrefix)
	}
	if n != 4326 {
		known, err := r.store.KnownSRID(ctx, n)
		if err != nil {
			return CRS{}, err
		}
		if !known {
			return CRS{}, paramErr(param, "EPSG:%d is not a CRS PostGIS knows", n)
		}
	}
	return EPSG(n), nil
}

// CRSList returns the CRSs a collection lists (its items may be read in any
// CRS PostGIS knows): ListedCRS, then the CRSs its sources were in, as the
// gdal task recorded them in their assets.
func (r *Reader) CRSList(ctx context.Context, catalogID, collectionID string) ([]CRS, error) {
	out := slices.Clone(ListedCRS)
	srids, err := r.store.SourceSRIDs(ctx, catalogID, collectionID)
	if err != nil {
		return nil, err
	}
	for _, n := range srids {
		if c := EPSG(n); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}
