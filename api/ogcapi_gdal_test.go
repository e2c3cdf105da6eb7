package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/gdaltest"
)

// gdal runs a GDAL command against the test server with a bearer token
// (GDAL_HTTP_HEADERS), and returns its standard output.
func (b *bundle) gdal(token string, name string, args ...string) string {
	b.t.Helper()
	gdaltest.Require(b.t)
	cmd := exec.Command(name, args...)
	cmd.Env = gdalEnv(token)
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(b.t, err, "%s %v: %s%s", name, args, out, stderr)
	return string(out)
}

// gdalEnv is GDAL's environment for the test server: the token in
// GDAL_HTTP_HEADERS, no cache, no retries, and no proxy between GDAL and
// loopback whatever the machine's http_proxy says.
func gdalEnv(token string) []string {
	return append(os.Environ(), "GDAL_HTTP_HEADERS=Authorization: Bearer "+token, "GDAL_HTTP_TIMEOUT=60",
		"CPL_VSIL_CURL_USE_CACHE=NO", "GDAL_HTTP_MAX_RETRY=0", "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
}

// gdalFeature is a feature as ogr2ogr writes it to GeoJSON.
type gdalFeature struct {
	Properties map[string]any `json:"properties"`
	Geometry   struct {
		Type        string    `json:"type"`
		Coordinates []float64 `json:"coordinates"`
	} `json:"geometry"`
}

// readGDALCopy reads what ogr2ogr wrote, by the feature's code.
func readGDALCopy(t *testing.T, path string) map[string]gdalFeature {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var fc struct{ Features []gdalFeature }
	require.NoError(t, json.Unmarshal(raw, &fc))
	out := map[string]gdalFeature{}
	for _, f := range fc.Features {
		code, _ := f.Properties["code"].(string)
		require.NotContains(t, out, code, "each feature once")
		out[code] = f
	}
	return out
}

// TestOGCAPIWithGDAL is issue 34's "done when": GDAL's OAPIF driver reads
// a catalog as a real client with a bearer token: ogrinfo lists its
// collections, ogr2ogr copies a collection of several pages out with
// every feature and attribute intact, and a bbox through the driver gives
// the features PostGIS gives. Another tenant's token lists nothing.
func TestOGCAPIWithGDAL(t *testing.T) {
	t.Parallel()
	b := setupPlaces(t)
	src := "OAPIF:" + b.http.URL + "/catalogs/cat-a"

	info := b.gdal(tokClientLimited, "ogrinfo", "-ro", "-q", src)
	require.Contains(t, info, "places", info)

	// Pages of 10 (PAGE_SIZE, GDAL's default said out loud): three pages,
	// followed by their next links.
	dir := t.TempDir()
	out := filepath.Join(dir, "places.geojson")
	b.gdal(tokClientLimited, "ogr2ogr", "-f", "GeoJSON", "-oo", "PAGE_SIZE=10", out, src, "places")
	got := readGDALCopy(t, out)
	require.Len(t, got, ogcPlaces)
	for i := 1; i <= ogcPlaces; i++ {
		code := fmt.Sprintf("P%02d", i)
		f, ok := got[code]
		require.True(t, ok, code)
		pop := i * 100
		if i == 1 {
			pop = 150 // the current version
		}
		kind := map[bool]string{true: "town", false: "village"}[i%3 == 0]
		require.Equal(t, fmt.Sprintf("Place %d", i), f.Properties["name"], code)
		require.Equal(t, float64(pop), f.Properties["pop"], code)
		require.Equal(t, i%2 == 0, f.Properties["flag"], code)
		require.Equal(t, kind, f.Properties["kind"], code)
		require.Equal(t, "Point", f.Geometry.Type)
		var lon, lat float64
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT ST_X(geom), ST_Y(geom) FROM s_cat_a.places WHERE external_id = $1 AND upper_inf(validity)`, code).Scan(&lon, &lat))
		require.Equal(t, []float64{lon, lat}, f.Geometry.Coordinates, code)
	}

	// A bbox (ogr2ogr -spat) is the server's: the features PostGIS finds.
	bboxOut := filepath.Join(dir, "bbox.geojson")
	b.gdal(tokClientLimited, "ogr2ogr", "-f", "GeoJSON", bboxOut, src, "places", "-spat", "3", "40", "8", "45")
	var codes []string
	for code := range readGDALCopy(t, bboxOut) {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	want := b.sqlIDs(`SELECT external_id FROM s_cat_a.places WHERE upper_inf(validity)
		AND ST_Intersects(geom, ST_MakeEnvelope(3, 40, 8, 45, 4326)) ORDER BY 1`)
	require.NotEmpty(t, want)
	require.Equal(t, want, codes)

	// Another tenant's token: the catalog is not there.
	cmd := exec.Command("ogrinfo", "-ro", "-q", src)
	cmd.Env = gdalEnv(tokClientB)
	res, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", res)
	require.NotContains(t, strings.ToLower(string(res)), "places")
}

// TestOGCAPISourceCRS: a collection lists the projected CRS its source was
// in (the gdal task records it in the asset), and its items read back in
// it at the source's own coordinates.
func TestOGCAPISourceCRS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startFeatureEngine(t, b, b.reports)
	b.createCatalog("cat-a", "roads")
	zipped := gdaltest.ZippedShapefileUTM(t, b.tenantDir("s_cat_a"))
	res := b.do("POST", "/ingestion/cat-a/roads", tokClientLimited, map[string]any{
		"source": zipped, "format": "gdal", "id_attribute": "code", "asset_id": "A-roads",
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)
	// The asset's description by the gdal task (describe-new-assets).
	var gdalTask string
	require.Eventually(t, func() bool {
		return b.pool.QueryRow(b.ctx, `SELECT task_id::text FROM tasks.tasks WHERE task_type = 'gdal' AND schema_name = 's_cat_a'`).Scan(&gdalTask) == nil
	}, time.Minute, 50*time.Millisecond, "the gdal task is created")
	require.Equal(t, "COMPLETED", b.follow("/tasks/"+gdalTask, tokClientLimited)["status"])

	const utm = "http://www.opengis.net/def/crs/EPSG/0/32632"
	col := b.do("GET", "/catalogs/cat-a/collections/roads", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, col.status, string(col.body))
	require.Contains(t, col.json(t)["crs"], utm)
	f := b.do("GET", "/catalogs/cat-a/collections/roads/items/r1?crs="+url.QueryEscape(utm), tokClientLimited, nil)
	require.Equal(t, http.StatusOK, f.status, string(f.body))
	require.Equal(t, "<"+utm+">", f.header.Get("Content-Crs"))
	start := f.json(t)["geometry"].(map[string]any)["coordinates"].([]any)[0].([]any)
	require.InDelta(t, gdaltest.UTMX, start[0], 1e-3)
	require.InDelta(t, gdaltest.UTMY, start[1], 1e-3)
	// And a bbox in it: the road starting there.
	res = b.do("GET", "/catalogs/cat-a/collections/roads/items?bbox-crs="+url.QueryEscape(utm)+"&bbox=499990,-10,500010,10", tokClientLimited, nil)
	require.Contains(t, featureIDs(t, res.json(t)), "r1")
}
