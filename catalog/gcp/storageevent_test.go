package gcp_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wftype"
)

func storageInputs(bucket, object, eventType, gen, overwrittenBy string) string {
	b, _ := json.Marshal(map[string]string{"catalog_id": "demo", "bucket": bucket, "object": object, "event_type": eventType,
		"generation": gen, "overwritten_by_generation": overwrittenBy, "size": "10", "content_type": "", "md5_hash": "",
		"event_time": "", "message_id": "m"})
	return string(b)
}

// assetEvent returns the payload of the latest asset event of an asset.
func (b *bundle) assetEvent(assetID string) (string, map[string]any) {
	b.t.Helper()
	var typ string
	var raw []byte
	require.NoError(b.t, b.store.DB().QueryRow(b.ctx, `SELECT event_type, payload FROM tasks.events
		WHERE event_type LIKE 'asset.%' AND payload->>'asset_id' = $1 ORDER BY event_id DESC LIMIT 1`, assetID).Scan(&typ, &raw))
	var p map[string]any
	require.NoError(b.t, json.Unmarshal(raw, &p))
	return typ, p
}

// TestStorageEvent maps finalize, delete and archive to the asset's life,
// by the path convention, in order of generations.
func TestStorageEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.catalogs.AddCollection(b.ctx, registryCollection("demo", "roads", `{"id_attribute":"road_id"}`))
	require.ErrorIs(t, err, wftype.ErrNotFound)
	b.catalog("demo")
	_, err = b.catalogs.AddCollection(b.ctx, registryCollection("demo", "roads", `{"id_attribute":"road_id"}`))
	require.NoError(t, err)
	b.own("demo", "bucket-demo")
	run := func(in string) map[string]any { return b.mustRun(b.h.StorageEvent, "s_demo", in) }

	out := run(storageInputs("bucket-demo", "demo/roads/2024/main roads.geojson", "OBJECT_FINALIZE", "5", ""))
	require.Equal(t, "created", out["outcome"])
	id := out["asset_id"].(string)
	require.Regexp(t, `^roads\.2024\.main_roads\.geojson-[0-9a-f]{8}$`, id)
	a, err := b.store.GetAsset(b.ctx, "demo", id)
	require.NoError(t, err)
	require.Equal(t, "gs://bucket-demo/demo/roads/2024/main roads.geojson", a.URI)
	require.Equal(t, "vector", a.Kind)
	require.Equal(t, "roads", *a.CollectionID)
	typ, p := b.assetEvent(id)
	require.Equal(t, "asset.created", typ)
	require.Equal(t, "storage", p["origin"])
	require.Equal(t, "geojson", p["format"])
	require.Equal(t, "road_id", p["id_attribute"], "from the collection's layer_config")

	// An older generation's notification arriving late changes nothing.
	out = run(storageInputs("bucket-demo", "demo/roads/2024/main roads.geojson", "OBJECT_FINALIZE", "4", ""))
	require.Equal(t, "ignored", out["outcome"])
	out = run(storageInputs("bucket-demo", "demo/roads/2024/main roads.geojson", "OBJECT_FINALIZE", "9", ""))
	require.Equal(t, "updated", out["outcome"])
	// The delete of the generation the upload replaced is no deletion.
	out = run(storageInputs("bucket-demo", "demo/roads/2024/main roads.geojson", "OBJECT_DELETE", "5", "9"))
	require.Equal(t, "ignored", out["outcome"])
	out = run(storageInputs("bucket-demo", "demo/roads/2024/main roads.geojson", "OBJECT_ARCHIVE", "9", ""))
	require.Equal(t, "archived", out["outcome"])
	typ, _ = b.assetEvent(id)
	require.Equal(t, "asset.archived", typ)
	out = run(storageInputs("bucket-demo", "demo/roads/2024/main roads.geojson", "OBJECT_DELETE", "9", ""))
	require.Equal(t, "deleted", out["outcome"])
	a, err = b.store.GetAsset(b.ctx, "demo", id)
	require.NoError(t, err)
	require.Equal(t, "deleted", a.Status)

	// Kinds by extension: rasters and sidecars are no vectors.
	for file, kind := range map[string]string{"dem.tif": "raster", "roads.shx": "other", "roads.zip": "vector", "r.csv": "vector"} {
		out = run(storageInputs("bucket-demo", "demo/roads/"+file, "OBJECT_FINALIZE", "1", ""))
		require.Equal(t, kind, out["kind"], file)
	}
	_, p = b.assetEvent("roads.dem.tif")
	require.NotContains(t, p, "format", "a raster is not ingested")

	// Objects outside the convention, or of no collection, are ignored.
	for _, obj := range []string{"other/roads/a.geojson", "demo/a.geojson", "demo/rivers/a.geojson", "demo/roads/"} {
		out = run(storageInputs("bucket-demo", obj, "OBJECT_FINALIZE", "1", ""))
		require.Equal(t, "ignored", out["outcome"], obj)
		require.NotEmpty(t, out["reason"], obj)
	}
	out = run(storageInputs("bucket-demo", "demo/roads/never.geojson", "OBJECT_DELETE", "1", ""))
	require.Equal(t, "ignored", out["outcome"])

	// Tenancy: a task of another tenant, or a bucket the catalog does not own, fails for good.
	b.catalog("other")
	b.own("other", "bucket-other")
	for _, c := range []struct{ schema, in string }{
		{"s_other", storageInputs("bucket-demo", "demo/roads/x.geojson", "OBJECT_FINALIZE", "1", "")},
		{"s_demo", storageInputs("bucket-other", "demo/roads/x.geojson", "OBJECT_FINALIZE", "1", "")},
		{"s_demo", storageInputs("no-such-bucket", "demo/roads/x.geojson", "OBJECT_FINALIZE", "1", "")},
	} {
		_, err := b.run(b.h.StorageEvent, c.schema, c.in)
		require.Error(t, err, fmt.Sprint(c))
		require.True(t, wftype.IsPermanent(err))
	}
	_, err = b.store.GetAsset(b.ctx, "demo", "roads.x.geojson")
	require.ErrorIs(t, err, wftype.ErrNotFound)
}
