package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/ogcapi"
)

// ogcPlaces is the number of features placesGeoJSON writes.
const ogcPlaces = 25

// placesGeoJSON is a FeatureCollection of ogcPlaces points P01…P25: the
// first ten on either side of the antimeridian (lon 175…179.5 and
// -179.5…-175), the rest in Europe; each with a name, a population, a
// flag and a kind, so filters have strings, numbers and booleans to test.
func placesGeoJSON(pop func(i int) int) string {
	var feats []string
	for i := 1; i <= ogcPlaces; i++ {
		var lon, lat float64
		switch {
		case i <= 5:
			lon, lat = 174.5+float64(i), float64(i)
		case i <= 10:
			lon, lat = -185.5+float64(i), -float64(i)
		default:
			lon, lat = float64(i-10), 40+float64(i-10)/2
		}
		kind := map[bool]string{true: "town", false: "village"}[i%3 == 0]
		feats = append(feats, fmt.Sprintf(`{"type":"Feature","geometry":{"type":"Point","coordinates":[%g,%g]},`+
			`"properties":{"code":"P%02d","name":"Place %d","pop":%d,"flag":%t,"kind":%q}}`, lon, lat, i, i, pop(i), i%2 == 0, kind))
	}
	return `{"type":"FeatureCollection","features":[` + strings.Join(feats, ",") + `]}`
}

// setupPlaces is a bundle with the feature engine, catalog cat-a
// (collection places, ingested from placesGeoJSON valid from 2024-01-01,
// then P01's population changed from 2025-01-01) and cat-b (rivers).
func setupPlaces(t *testing.T) *bundle {
	t.Helper()
	b := setup(t)
	startFeatureEngine(t, b, b.reports)
	b.createCatalog("cat-a", "places")
	b.createCatalog("cat-b", "rivers")
	root := b.tenantDir("s_cat_a")
	ingest := func(file, body, start string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, file), []byte(body), 0o644))
		res := b.do("POST", "/ingestion/cat-a/places", tokClientLimited, map[string]any{
			"source": file, "format": "geojson", "id_attribute": "code", "validity_start": start, "asset_id": strings.TrimSuffix(file, ".geojson"),
		})
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
		task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
		require.Equal(t, "COMPLETED", task["status"], task)
	}
	ingest("places.geojson", placesGeoJSON(func(i int) int { return i * 100 }), "2024-01-01T00:00:00Z")
	ingest("places2.geojson", `{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[175.5,1]},`+
		`"properties":{"code":"P01","name":"Place 1","pop":150,"flag":false,"kind":"village"}}]}`, "2025-01-01T00:00:00Z")
	return b
}

// featureIDs returns the ids of a FeatureCollection's features, in order.
func featureIDs(t *testing.T, fc map[string]any) []string {
	t.Helper()
	require.Equal(t, "FeatureCollection", fc["type"])
	var ids []string
	for _, f := range fc["features"].([]any) {
		ids = append(ids, f.(map[string]any)["id"].(string))
	}
	return ids
}

// linkOf returns the href of the link with rel, "" when there is none.
func linkOf(m map[string]any, rel string) string {
	links, _ := m["links"].([]any)
	for _, l := range links {
		if l := l.(map[string]any); l["rel"] == rel {
			return l["href"].(string)
		}
	}
	return ""
}

// sqlIDs runs a query of external ids against the database, as PostGIS
// answers it.
func (b *bundle) sqlIDs(query string, args ...any) []string {
	b.t.Helper()
	rows, err := b.pool.Query(b.ctx, query, args...)
	require.NoError(b.t, err)
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		require.NoError(b.t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(b.t, rows.Err())
	return ids
}

// placesFingerprint fingerprints cat-a's feature table.
func (b *bundle) placesFingerprint() string {
	b.t.Helper()
	var sum string
	require.NoError(b.t, b.pool.QueryRow(b.ctx, `SELECT count(*) || md5(string_agg(p::text, ',' ORDER BY p::text)) FROM s_cat_a.places p`).Scan(&sum))
	return sum
}

// get follows an absolute link of the test server.
func (b *bundle) get(href, token string) response {
	b.t.Helper()
	path, ok := strings.CutPrefix(href, b.http.URL)
	require.True(b.t, ok, "links are absolute URLs of the server: %s", href)
	return b.do("GET", path, token, nil)
}

// TestOGCAPIFeatures reads a catalog as OGC API – Features: landing page,
// conformance, collections with extent and count, items a page at a time
// both ways, bbox (across the antimeridian too) and CQL2 filters giving
// PostGIS's answer, past states by datetime, properties and CRSs, and the
// refusals; another tenant's token sees none of it.
func TestOGCAPIFeatures(t *testing.T) {
	t.Parallel()
	b := setupPlaces(t)
	const items = "/catalogs/cat-a/collections/places/items"
	current := `SELECT external_id FROM s_cat_a.places WHERE upper_inf(validity) AND deleted_at IS NULL `

	t.Run("landing page and conformance", func(t *testing.T) {
		b := b.in(t)
		res := b.do("GET", "/catalogs/cat-a", tokClientLimited, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		land := res.json(t)
		require.Equal(t, b.http.URL+"/catalogs/cat-a/conformance", linkOf(land, "conformance"))
		require.Equal(t, b.http.URL+"/catalogs/cat-a/collections", linkOf(land, "data"))
		require.Equal(t, b.http.URL+"/openapi.json", linkOf(land, "service-desc"))
		res = b.get(linkOf(land, "conformance"), tokClientLimited)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var conf struct{ ConformsTo []string }
		require.NoError(t, json.Unmarshal(res.body, &conf))
		require.Equal(t, ogcapi.Conformance(), conf.ConformsTo)
		require.Contains(t, conf.ConformsTo, ogcapi.ConfCore)
	})

	t.Run("collections", func(t *testing.T) {
		b := b.in(t)
		res := b.do("GET", "/catalogs/cat-a/collections", tokClientLimited, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		cols := res.json(t)["collections"].([]any)
		require.Len(t, cols, 1)
		c := cols[0].(map[string]any)
		require.Equal(t, "places", c["id"])
		require.Equal(t, float64(ogcPlaces), c["itemCount"])
		require.Equal(t, b.http.URL+items, linkOf(c, "items"))
		ext := c["extent"].(map[string]any)
		require.Equal(t, []any{[]any{-179.5, -10.0, 179.5, 47.5}}, ext["spatial"].(map[string]any)["bbox"])
		require.Equal(t, []any{[]any{"2024-01-01T00:00:00Z", nil}}, ext["temporal"].(map[string]any)["interval"])
		require.Contains(t, c["crs"], ogcapi.CRS84URI)

		one := b.do("GET", "/catalogs/cat-a/collections/places", tokClientLimited, nil)
		require.Equal(t, http.StatusOK, one.status, string(one.body))
		require.Equal(t, c, one.json(t))
	})

	t.Run("pages both ways on a keyset", func(t *testing.T) {
		b := b.in(t)
		var pages [][]string
		href := b.http.URL + items + "?limit=10"
		var last map[string]any
		for href != "" {
			res := b.get(href, tokClientLimited)
			require.Equal(t, http.StatusOK, res.status, string(res.body))
			require.Equal(t, "application/geo+json", res.header.Get("Content-Type"))
			require.Equal(t, "<"+ogcapi.CRS84URI+">", res.header.Get("Content-Crs"))
			last = res.json(t)
			ids := featureIDs(t, last)
			require.Equal(t, float64(len(ids)), last["numberReturned"])
			pages = append(pages, ids)
			href = linkOf(last, "next")
		}
		require.Equal(t, []int{10, 10, 5}, []int{len(pages[0]), len(pages[1]), len(pages[2])})
		all := slices.Concat(pages...)
		require.Equal(t, b.sqlIDs(current+`ORDER BY external_id`), all, "every current feature once, in id order")
		// Back from the last page: the previous pages, the first without prev.
		prev := b.get(linkOf(last, "prev"), tokClientLimited).json(t)
		require.Equal(t, pages[1], featureIDs(t, prev))
		first := b.get(linkOf(prev, "prev"), tokClientLimited).json(t)
		require.Equal(t, pages[0], featureIDs(t, first))
		require.Empty(t, linkOf(first, "prev"))
		require.NotEmpty(t, linkOf(first, "next"))
	})

	t.Run("bbox as PostGIS", func(t *testing.T) {
		b := b.in(t)
		for _, c := range []struct{ bbox, where string }{
			{"3,40,8,45", `ST_Intersects(geom, ST_MakeEnvelope(3, 40, 8, 45, 4326))`},
			// Across the antimeridian: from 177°E to 178°W.
			{"177,-10,-178,10", `(ST_Intersects(geom, ST_MakeEnvelope(177, -10, 180, 10, 4326)) OR ST_Intersects(geom, ST_MakeEnvelope(-180, -10, -178, 10, 4326)))`},
		} {
			res := b.do("GET", items+"?limit=100&bbox="+c.bbox, tokClientLimited, nil)
			require.Equal(t, http.StatusOK, res.status, string(res.body))
			want := b.sqlIDs(current + `AND ` + c.where + ` ORDER BY external_id`)
			require.NotEmpty(t, want)
			require.Equal(t, want, featureIDs(t, res.json(t)), c.bbox)
		}
		// In Web Mercator (bbox-crs), and EPSG:4326's latitude-first order.
		res := b.do("GET", items+"?bbox-crs="+url.QueryEscape("http://www.opengis.net/def/crs/EPSG/0/3857")+
			"&bbox=333958,4865942,890555,5621521", tokClientLimited, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, b.sqlIDs(current+`AND ST_Intersects(ST_Transform(geom, 3857), ST_MakeEnvelope(333958, 4865942, 890555, 5621521, 3857)) ORDER BY 1`),
			featureIDs(t, res.json(t)))
		res = b.do("GET", items+"?bbox-crs=EPSG:4326&bbox=40,3,45,8", tokClientLimited, nil)
		require.Equal(t, b.sqlIDs(current+`AND ST_Intersects(geom, ST_MakeEnvelope(3, 40, 8, 45, 4326)) ORDER BY 1`), featureIDs(t, res.json(t)))
	})

	t.Run("CQL2 as PostGIS", func(t *testing.T) {
		b := b.in(t)
		for _, c := range []struct{ lang, filter, where string }{
			{"cql2-text", `pop > 1000 AND name LIKE 'Place 1%'`, `(properties->>'pop')::int > 1000 AND properties->>'name' LIKE 'Place 1%'`},
			{"cql2-text", `kind = 'town' OR NOT flag = true`, `(properties->>'kind' = 'town' OR NOT (properties->>'flag')::bool)`},
			{"cql2-text", `pop BETWEEN 500 AND 900 OR code IN ('P20', 'P21')`, `((properties->>'pop')::int BETWEEN 500 AND 900 OR external_id IN ('P20', 'P21'))`},
			{"cql2-text", `missing IS NULL AND 2000 <= pop`, `(properties->>'pop')::int >= 2000`},
			{"cql2-text", `S_INTERSECTS(geometry, POLYGON((0 40, 8 40, 8 46, 0 46, 0 40)))`, `ST_Intersects(geom, 'SRID=4326;POLYGON((0 40, 8 40, 8 46, 0 46, 0 40))'::geometry)`},
			{"cql2-text", `S_WITHIN(geometry, BBOX(170, -90, 180, 90)) AND pop < 400`, `ST_Within(geom, ST_MakeEnvelope(170, -90, 180, 90, 4326)) AND (properties->>'pop')::int < 400`},
			{"cql2-text", `S_DISJOINT(geometry, BBOX(-180, -90, 0, 90))`, `ST_Disjoint(geom, ST_MakeEnvelope(-180, -90, 0, 90, 4326))`},
			{"cql2-json", `{"op":"and","args":[{"op":">=","args":[{"property":"pop"},1500]},{"op":"s_intersects","args":[{"property":"geometry"},{"type":"Polygon","coordinates":[[[0,40],[20,40],[20,50],[0,50],[0,40]]]}]}]}`,
				`(properties->>'pop')::int >= 1500 AND ST_Intersects(geom, ST_MakeEnvelope(0, 40, 20, 50, 4326))`},
			{"cql2-json", `{"op":"or","args":[{"op":"=","args":[{"property":"kind"},"town"]},{"op":"in","args":[{"property":"code"},["P02","P04"]]}]}`,
				`(properties->>'kind' = 'town' OR external_id IN ('P02', 'P04'))`},
		} {
			res := b.do("GET", items+"?limit=100&filter-lang="+c.lang+"&filter="+url.QueryEscape(c.filter), tokClientLimited, nil)
			require.Equal(t, http.StatusOK, res.status, "%s: %s", c.filter, res.body)
			want := b.sqlIDs(current + `AND ` + c.where + ` ORDER BY external_id`)
			require.NotEmpty(t, want, c.where)
			require.Equal(t, want, featureIDs(t, res.json(t)), c.filter)
		}
	})

	t.Run("a past state by datetime", func(t *testing.T) {
		b := b.in(t)
		pop := func(res response) float64 {
			require.Equal(t, http.StatusOK, res.status, string(res.body))
			return res.json(t)["properties"].(map[string]any)["pop"].(float64)
		}
		require.Equal(t, 150.0, pop(b.do("GET", items+"/P01", tokClientLimited, nil)))
		require.Equal(t, 100.0, pop(b.do("GET", items+"/P01?datetime=2024-06-01T00:00:00Z", tokClientLimited, nil)))
		require.Equal(t, http.StatusNotFound, b.do("GET", items+"/P01?datetime=2023-06-01", tokClientLimited, nil).status)
		// An interval reads every version valid in it: P01 twice.
		res := b.do("GET", items+"?limit=100&datetime=2024-06-01T00:00:00Z/..&filter="+url.QueryEscape("code = 'P01'"), tokClientLimited, nil)
		require.Equal(t, []string{"P01", "P01"}, featureIDs(t, res.json(t)))
		res = b.do("GET", items+"?limit=100&datetime=2024-06-01", tokClientLimited, nil)
		require.Len(t, featureIDs(t, res.json(t)), ogcPlaces)
	})

	t.Run("properties and crs", func(t *testing.T) {
		b := b.in(t)
		res := b.do("GET", items+"/P11?properties=name,pop", tokClientLimited, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		f := res.json(t)
		require.Equal(t, map[string]any{"name": "Place 11", "pop": 1100.0}, f["properties"])
		require.Equal(t, []any{1.0, 40.5}, f["geometry"].(map[string]any)["coordinates"])
		require.Equal(t, b.http.URL+items+"/P11", linkOf(f, "self"))

		res = b.do("GET", items+"/P11?crs="+url.QueryEscape("http://www.opengis.net/def/crs/EPSG/0/4326"), tokClientLimited, nil)
		require.Equal(t, "<http://www.opengis.net/def/crs/EPSG/0/4326>", res.header.Get("Content-Crs"))
		require.Equal(t, []any{40.5, 1.0}, res.json(t)["geometry"].(map[string]any)["coordinates"], "EPSG:4326 is latitude first")

		res = b.do("GET", items+"/P11?crs="+url.QueryEscape("http://www.opengis.net/def/crs/EPSG/0/3857"), tokClientLimited, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		xy := res.json(t)["geometry"].(map[string]any)["coordinates"].([]any)
		var wantX, wantY float64
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT ST_X(g), ST_Y(g) FROM (SELECT ST_Transform('SRID=4326;POINT(1 40.5)'::geometry, 3857) g) s`).Scan(&wantX, &wantY))
		require.InDelta(t, wantX, xy[0], 1e-6)
		require.InDelta(t, wantY, xy[1], 1e-6)
	})

	t.Run("refusals", func(t *testing.T) {
		b := b.in(t)
		for _, c := range []struct{ query, param string }{
			{"bbox=1,2,3", "bbox"}, {"bbox=1,50,2,40", "bbox"}, {"bbox=0,0,200,10", "bbox"}, {"bbox-crs=EPSG:3857", "bbox-crs"},
			{"limit=0", "limit"}, {"limit=ten", "limit"}, {"datetime=yesterday", "datetime"},
			{"datetime=2025-01-01/2024-01-01", "datetime"}, {"after=bm90IGEgY3Vyc29y", "after"}, {"crs=EPSG:999999", "crs"},
			{"crs=urn:nothing", "crs"}, {"filter=" + url.QueryEscape("pop >"), "filter"}, {"filter=" + url.QueryEscape("pop = 'a' AND"), "filter"},
			{"filter-lang=sql&filter=x", "filter-lang"}, {"filter-lang=cql2-json&filter=" + url.QueryEscape(`{"op":"drop"}`), "filter"},
			{"filter=" + url.QueryEscape("S_INTERSECTS(geometry, POLYGON((0 0, 1 1)))"), "filter"},
			{"filter=" + url.QueryEscape("S_INTERSECTS(geometry, POLYGON((0 0, 1 1, 1 0)))"), "filter"},
			{"unknown=1", "unknown"}, {"f=xml", "f"},
		} {
			// The feature engine works on in the background (search
			// indexing), so what must not change is the collection.
			before := b.placesFingerprint()
			res := b.do("GET", items+"?"+c.query, tokClientLimited, nil)
			require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", c.query, res.body)
			require.Contains(t, string(res.body), `"`+c.param+`"`, c.query)
			require.Equal(t, before, b.placesFingerprint())
		}
		res := b.do("GET", items+"/P99", tokClientLimited, nil)
		require.Equal(t, http.StatusNotFound, res.status, string(res.body))
		res = b.do("GET", "/catalogs/cat-a/collections/nowhere/items", tokClientLimited, nil)
		require.Equal(t, http.StatusNotFound, res.status, string(res.body))
	})

	t.Run("another tenant sees nothing", func(t *testing.T) {
		b := b.in(t)
		for _, path := range []string{"/catalogs/cat-a", "/catalogs/cat-a/conformance", "/catalogs/cat-a/collections",
			"/catalogs/cat-a/collections/places", items, items + "?bbox=0,0,10,10", items + "/P01",
			"/catalogs/cat-a/collections/places/queryables"} {
			res := b.do("GET", path, tokClientB, nil)
			require.Equal(t, http.StatusNotFound, res.status, "%s: %s", path, res.body)
			require.NotContains(t, string(res.body), "Place")
		}
		// And cat-b's own collection is there for its token, empty.
		res := b.do("GET", "/catalogs/cat-b/collections/rivers/items", tokClientB, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Empty(t, featureIDs(t, res.json(t)))
		require.Equal(t, http.StatusUnauthorized, b.do("GET", items, "", nil).status)
	})
}

// TestOGCAPIHTML: a person browses a catalog in HTML (f=html, or a
// browser's Accept): landing page, collections, features and one feature,
// each page linking on in HTML; GDAL's Accept keeps JSON.
func TestOGCAPIHTML(t *testing.T) {
	t.Parallel()
	b := setupPlaces(t)
	browser := http.Header{"Accept": {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}}
	page := func(path string, header http.Header) string {
		res := b.doHeaders("GET", path, tokClientLimited, nil, header)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, "text/html; charset=utf-8", res.header.Get("Content-Type"), path)
		require.Contains(t, res.header.Get("Content-Security-Policy"), "default-src 'none'")
		return string(res.body)
	}
	land := page("/catalogs/cat-a", browser)
	require.Contains(t, land, `href="`+b.http.URL+`/catalogs/cat-a/collections?f=html"`)
	require.Contains(t, land, `<link rel="stylesheet" href="/ui/app.css">`, "the dashboard's look")
	cols := page("/catalogs/cat-a/collections?f=html", nil)
	require.Contains(t, cols, `href="`+b.http.URL+`/catalogs/cat-a/collections/places?f=html"`)
	require.Contains(t, cols, `<td class="num">25</td>`)
	require.Contains(t, page("/catalogs/cat-a/conformance?f=html", nil), ogcapi.ConfCore)
	col := page("/catalogs/cat-a/collections/places", browser)
	require.Contains(t, col, `/catalogs/cat-a/collections/places/items?f=html`)
	items := page("/catalogs/cat-a/collections/places/items?f=html&limit=10", nil)
	require.Contains(t, items, `<tr data-id="P01">`)
	require.NotContains(t, items, `data-id="P11"`)
	require.Contains(t, items, `rel="next"`)
	one := page("/catalogs/cat-a/collections/places/items/P11", browser)
	require.Contains(t, one, `<th>name</th><td>Place 11</td>`)
	// GDAL's and the dashboard's Accept: JSON.
	res := b.doHeaders("GET", "/catalogs/cat-a", tokClientLimited, nil, http.Header{"Accept": {"application/json"}})
	require.Equal(t, "application/json", res.header.Get("Content-Type"))
	// Another tenant: 404 in HTML too.
	res = b.doHeaders("GET", "/catalogs/cat-a/collections/places/items?f=html", tokClientB, nil, nil)
	require.Equal(t, http.StatusNotFound, res.status)
}
