package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/gdaltest"
)

// gdal runs a GDAL command against the test server with a bearer token
// (GDAL_HTTP_HEADERS), and returns its standard output.
func (b *bundle) gdal(token string, name string, args ...string) string {
	b.t.Helper()
	gdaltest.Require(b.t)
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "GDAL_HTTP_HEADERS=Authorization: Bearer "+token, "GDAL_HTTP_TIMEOUT=60",
		"CPL_VSIL_CURL_USE_CACHE=NO", "GDAL_HTTP_MAX_RETRY=0")
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(b.t, err, "%s %v: %s%s", name, args, out, stderr)
	return string(out)
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
	cmd.Env = append(os.Environ(), "GDAL_HTTP_HEADERS=Authorization: Bearer "+tokClientB)
	res, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", res)
	require.NotContains(t, strings.ToLower(string(res)), "places")
}
