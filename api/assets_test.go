package api_test

import (
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestAssets: a catalog's assets are registered, read, listed, archived,
// updated and deleted through /catalogs/{id}/assets, each change with its
// asset.* event in the catalog's tenant; another tenant's token sees none
// of it.
func TestAssets(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)

	res := b.do("POST", "/catalogs/cat-a/assets", tokClientLimited, map[string]any{
		"asset_id": "ROADS_2024", "collection_id": "roads", "uri": "gs://bucket/roads.zip", "kind": "vector",
		"metadata": map[string]any{"source": "survey"},
	})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	require.Equal(t, "/catalogs/cat-a/assets/ROADS_2024", res.header.Get("Location"))
	a := res.json(t)
	require.Equal(t, "active", a["status"])
	require.Equal(t, "roads", a["collection_id"])

	res = b.do("POST", "/catalogs/cat-a/assets", tokClientLimited, map[string]any{"asset_id": "ROADS_2024", "uri": "x"})
	require.Equal(t, http.StatusConflict, res.status, string(res.body))
	b.unchanged(func() {
		res = b.do("POST", "/catalogs/cat-a/assets", tokClientLimited, map[string]any{"asset_id": "-bad", "uri": "", "kind": "video"})
		require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
		require.Contains(t, string(res.body), "/asset_id")
		require.Contains(t, string(res.body), "/kind")
		res = b.do("POST", "/catalogs/cat-a/assets", tokClientLimited, map[string]any{"asset_id": "X", "uri": "u", "collection_id": "rivers"})
		require.Equal(t, http.StatusNotFound, res.status, "another catalog's collection: %s", res.body)
	})
	res = b.do("POST", "/catalogs/cat-a/assets", tokAdmin, map[string]any{"asset_id": "DEM", "uri": "gs://bucket/dem.tif", "kind": "raster"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))

	// Archive, then update metadata, then delete: each with its event.
	res = b.do("PATCH", "/catalogs/cat-a/assets/ROADS_2024", tokClientLimited, map[string]any{"status": "archived"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = b.do("PATCH", "/catalogs/cat-a/assets/ROADS_2024", tokClientLimited, map[string]any{"metadata": map[string]any{"checked": true}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, map[string]any{"source": "survey", "checked": true}, res.json(t)["metadata"], "metadata is merged")
	res = b.do("DELETE", "/catalogs/cat-a/assets/DEM", tokClientLimited, nil)
	require.Equal(t, http.StatusNoContent, res.status, string(res.body))

	list := b.do("GET", "/catalogs/cat-a/assets?limit=1", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, list.status, string(list.body))
	items := list.json(t)["items"].([]any)
	require.Len(t, items, 1, "the deleted asset is not listed by default")
	require.Equal(t, "archived", items[0].(map[string]any)["status"])
	deleted := b.do("GET", "/catalogs/cat-a/assets?status=deleted", tokClientLimited, nil).json(t)["items"].([]any)
	require.Len(t, deleted, 1)
	require.Equal(t, "DEM", deleted[0].(map[string]any)["asset_id"])
	got := b.do("GET", "/catalogs/cat-a/assets/DEM", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, "deleted", got.json(t)["status"])

	rows, err := b.pool.Query(b.ctx, `SELECT event_type FROM tasks.events WHERE schema_name = 's_cat_a' AND event_type LIKE 'asset.%' ORDER BY created_at, event_id`)
	require.NoError(t, err)
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"asset.created", "asset.created", "asset.archived", "asset.updated", "asset.deleted"}, types)

	// Another tenant: everything is 404, and nothing changes.
	b.unchanged(func() {
		for _, r := range []struct{ method, path string }{
			{"GET", "/catalogs/cat-a/assets"}, {"GET", "/catalogs/cat-a/assets/ROADS_2024"},
			{"PATCH", "/catalogs/cat-a/assets/ROADS_2024"}, {"DELETE", "/catalogs/cat-a/assets/ROADS_2024"},
		} {
			var body any
			if r.method == "PATCH" {
				body = map[string]any{"status": "deleted"}
			}
			res := b.do(r.method, r.path, tokClientB, body)
			require.Equal(t, http.StatusNotFound, res.status, "%s %s: %s", r.method, r.path, res.body)
		}
		res := b.do("POST", "/catalogs/cat-a/assets", tokClientB, map[string]any{"asset_id": "MINE", "uri": "u"})
		require.Equal(t, http.StatusNotFound, res.status)
		res = b.do("GET", "/catalogs/cat-b/assets/ROADS_2024", tokClientB, nil)
		require.Equal(t, http.StatusNotFound, res.status, "ids are per catalog")
	})
}

// TestAssetViewsRedactCredentials: an asset registered with credentials in
// its URI (a password, a signed query, a token) and in a URL of its
// metadata keeps them in the registry, for the handlers that read it, but
// no answer shows them: the create, read, list and update answers, to the
// tenant's own token and to an admin's.
func TestAssetViewsRedactCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a", "roads")
	const uri = "https://ingest:hunter2@data.example.com/roads.gpkg?X-Goog-Signature=deadbeef&token=t0ps3cret&part=1"
	const shown = "https://ingest:REDACTED@data.example.com/roads.gpkg?X-Goog-Signature=REDACTED&token=REDACTED&part=1"
	secrets := []string{"hunter2", "deadbeef", "t0ps3cret", "m3tasecret"}
	noSecrets := func(res response) {
		t.Helper()
		for _, s := range secrets {
			require.NotContains(t, string(res.body), s)
		}
	}
	res := b.do("POST", "/catalogs/cat-a/assets", tokClientLimited, map[string]any{
		"asset_id": "ROADS", "uri": uri, "kind": "other",
		"metadata": map[string]any{"mirror": "https://mirror.example.com/roads.gpkg?api_key=m3tasecret"},
	})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	noSecrets(res)
	require.Equal(t, shown, res.json(t)["uri"])
	require.Equal(t, map[string]any{"mirror": "https://mirror.example.com/roads.gpkg?api_key=REDACTED"}, res.json(t)["metadata"])
	for _, tok := range []string{tokClientLimited, tokAdmin} {
		got := b.do("GET", "/catalogs/cat-a/assets/ROADS", tok, nil)
		require.Equal(t, http.StatusOK, got.status, string(got.body))
		noSecrets(got)
		require.Equal(t, shown, got.json(t)["uri"])
		list := b.do("GET", "/catalogs/cat-a/assets", tok, nil)
		require.Equal(t, http.StatusOK, list.status, string(list.body))
		noSecrets(list)
		require.Contains(t, string(list.body), "REDACTED")
	}
	res = b.do("PATCH", "/catalogs/cat-a/assets/ROADS", tokClientLimited, map[string]any{"metadata": map[string]any{"checked": true}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	noSecrets(res)

	var stored string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT uri FROM catalog.assets WHERE catalog_id = 'cat-a' AND asset_id = 'ROADS'`).Scan(&stored))
	require.Equal(t, uri, stored, "the registry keeps the URI as given")
}
