package gdal_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/gdal"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/gdaltest"
	"github.com/wfhq/wf/wftype"
)

// TestShippedSpec: with the shipped specs/geodata.yaml, a new raster asset
// is described through the event consumer, the subscription and the
// engine, and its metadata gets the result; an asset of kind other is
// left alone.
func TestShippedSpec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	catalogtest.StartEngine(t, b.pool, builtins.Deps{Store: b.store, LocalRoots: []string{b.root}}, "../../specs/geodata.yaml")

	_, err := b.reg.AddAsset(b.ctx, store.NewAsset{CatalogID: "cat", ID: "DEM", URI: gdaltest.GeoTIFFUTM(t, b.files), Kind: store.AssetRaster})
	require.NoError(t, err)
	_, err = b.reg.AddAsset(b.ctx, store.NewAsset{CatalogID: "cat", ID: "README", URI: "readme.txt"})
	require.NoError(t, err)

	task := catalogtest.WaitEnded(t, b.store, gdal.HandlerName, 1)[0]
	require.Equal(t, wftype.StatusCompleted, task.Status, "error: %v", task.Error)
	require.Equal(t, "s_cat", task.SchemaName)
	require.Equal(t, wftype.ScopeAsset, task.Scope)
	var out gdal.Outputs
	require.NoError(t, json.Unmarshal(task.Outputs, &out))
	require.Equal(t, "DEM", out.AssetID)
	require.Equal(t, 32632, out.Info.CRS.EPSG)
	a, err := b.store.GetAsset(b.ctx, "cat", "DEM")
	require.NoError(t, err)
	var meta map[string]gdal.Info
	require.NoError(t, json.Unmarshal(a.Metadata, &meta))
	require.Equal(t, out.Info, meta[gdal.MetadataKey])

	// The consumer has handled both events: README's made no task.
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.events WHERE event_type = 'asset.created'`).Scan(&pending))
		return pending == 0
	}, 60*time.Second, 20*time.Millisecond)
	tasks, err := b.store.ListTasks(b.ctx, store.TaskFilter{TaskTypes: []string{gdal.HandlerName}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, tasks, 1)
}
