package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/gdaltest"
)

// TestGDALIngestionEndToEnd is issue 16's "done when": a zipped Shapefile
// and a GeoPackage, both in projected CRSs, go through POST /ingestion and
// the engine into PostGIS tables that GDAL's own ogr2ogr reads back at the
// known WGS84 coordinates.
func TestGDALIngestionEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startFeatureEngine(t, b, t.TempDir())
	b.createCatalog("cat-a", "parcels", "roads")
	root := b.tenantDir("s_cat_a")
	gpkg := gdaltest.GeoPackage3857(t, root, false)
	zipped := gdaltest.ZippedShapefileUTM(t, root)

	for _, sub := range []struct{ collection, source string }{{"parcels", gpkg}, {"roads", zipped}} {
		res := b.do("POST", "/ingestion/cat-a/"+sub.collection, tokClientLimited, map[string]any{
			"source": sub.source, "format": "gdal", "id_attribute": "code", "asset_id": "A-" + sub.collection,
		})
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
		task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
		require.Equal(t, "COMPLETED", task["status"], task)
		require.Equal(t, 2.0, task["outputs"].(map[string]any)["features"].(map[string]any)["created"], task)
	}

	// Each source is recorded as the catalog's asset.
	asset := b.do("GET", "/catalogs/cat-a/assets/A-roads", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, asset.status, string(asset.body))
	av := asset.json(t)
	require.Equal(t, filepath.Base(zipped), av["uri"], "a path in the tenant's folder is shown relative to it")
	require.Equal(t, "vector", av["kind"])
	require.Equal(t, "roads", av["collection_id"])

	// ogr2ogr reads the tables back, geometry from the PostGIS column.
	cfg := b.pool.Config().ConnConfig
	pg := fmt.Sprintf("PG:host=%s port=%d dbname=%s user=%s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	readBack := func(table string) map[string][]any {
		cmd := exec.Command("ogr2ogr", "-f", "GeoJSONSeq", "/vsistdout/", pg, "-sql",
			"SELECT external_id, geom FROM "+table+" WHERE upper_inf(validity) ORDER BY external_id")
		cmd.Env = append(cmd.Environ(), "PGPASSWORD="+cfg.Password)
		out, err := cmd.Output()
		require.NoError(t, err, "%s", out)
		got := map[string][]any{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var f struct {
				Properties struct {
					ExternalID string `json:"external_id"`
				} `json:"properties"`
				Geometry struct {
					Type        string `json:"type"`
					Coordinates any    `json:"coordinates"`
				} `json:"geometry"`
			}
			require.NoError(t, json.NewDecoder(bytes.NewReader([]byte(line))).Decode(&f), line)
			got[f.Properties.ExternalID] = []any{f.Geometry.Type, f.Geometry.Coordinates}
		}
		return got
	}
	parcels := readBack("s_cat_a.parcels")
	require.Len(t, parcels, 2)
	require.Equal(t, "Point", parcels["p1"][0])
	p := parcels["p1"][1].([]any)
	require.InDelta(t, 10.0, p[0], 1e-7)
	require.InDelta(t, 45.0, p[1], 1e-7)
	require.Equal(t, "Polygon", parcels["sq"][0])

	roads := readBack("s_cat_a.roads")
	require.Len(t, roads, 2)
	start := roads["r1"][1].([]any)[0].([]any)
	require.InDelta(t, 9.0, start[0], 1e-7)
	require.InDelta(t, 0.0, start[1], 1e-7)
}
