package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIngestionAttributeMapping: inputs.attributes selects, renames and
// casts what is stored, as OGC API items read it back; a value that cannot
// be cast rejects its record alone; a bad mapping is refused at submission.
func TestIngestionAttributeMapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startFeatureEngine(t, b, b.reports)
	b.createCatalog("cat-a", "places")
	root := b.tenantDir("s_cat_a")
	require.NoError(t, os.WriteFile(filepath.Join(root, "places.geojson"), []byte(placesGeoJSON(func(i int) int { return i * 100 })), 0o644))
	mapping := map[string]any{
		"select": []string{"code", "name", "pop", "flag"},
		"rename": map[string]any{"pop": "population", "code": "ref"},
		"cast":   map[string]any{"pop": "string", "flag": "integer"},
	}
	res := b.do("POST", "/ingestion/cat-a/places", tokClientLimited, map[string]any{
		"source": "places.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "PLACES", "attributes": mapping,
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)

	f := b.do("GET", "/catalogs/cat-a/collections/places/items/P02", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, f.status, string(f.body))
	require.Equal(t, map[string]any{"ref": "P02", "name": "Place 2", "population": "200", "flag": 1.0}, f.json(t)["properties"])

	// A value that cannot be cast: that record is rejected, the others stored.
	require.NoError(t, os.WriteFile(filepath.Join(root, "bad.geojson"), []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","geometry":{"type":"Point","coordinates":[1,1]},"properties":{"code":"B1","n":"12"}},
{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"code":"B2","n":"twelve"}}]}`), 0o644))
	res = b.do("POST", "/ingestion/cat-a/places", tokClientLimited, map[string]any{
		"source": "bad.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "BAD", "attributes": map[string]any{"cast": map[string]any{"n": "integer"}},
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task = b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)
	require.Equal(t, 1.0, task["outputs"].(map[string]any)["features"].(map[string]any)["rejected"], task)
	f = b.do("GET", "/catalogs/cat-a/collections/places/items/B1", tokClientLimited, nil)
	require.Equal(t, 12.0, f.json(t)["properties"].(map[string]any)["n"])
	require.Equal(t, http.StatusNotFound, b.do("GET", "/catalogs/cat-a/collections/places/items/B2", tokClientLimited, nil).status)

	// A cast to a type there is not: 400 naming it, no task. (The engine
	// works on in the background, indexing: what must not change is the
	// ingestions.)
	ingestions := func() []string {
		return b.sqlIDs(`SELECT task_id::text FROM tasks.tasks WHERE task_type = 'ingestion' ORDER BY 1`)
	}
	before := ingestions()
	res = b.do("POST", "/ingestion/cat-a/places", tokClientLimited, map[string]any{
		"source": "places.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "X", "attributes": map[string]any{"cast": map[string]any{"pop": "date"}},
	})
	require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
	require.Contains(t, string(res.body), "/attributes/cast/pop")
	require.Equal(t, before, ingestions())
}
