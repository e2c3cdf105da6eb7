package gdal_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/gdal"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/gdaltest"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// TestShippedSpec: with the shipped specs/geodata.yaml, a new raster asset
// is described through the event consumer, the subscription and the
// engine, and its metadata gets the result; an asset of kind other is
// left alone.
func TestShippedSpec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	set, err := spec.Load(spec.Options{Builtins: builtins.Names()}, "../../specs/geodata.yaml")
	require.NoError(t, err)
	cl := client.New(b.store, set)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := builtin.NewRegistry()
	h, err := builtins.New(builtins.Deps{Store: b.store, LocalRoots: []string{b.root}, Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, h.Register(reg))
	rs, err := runnerset.Build(set, runnerset.Options{Registry: reg, DefaultVisibilityTimeout: time.Minute, Logger: quiet})
	require.NoError(t, err)
	cons, err := events.NewConsumer(events.ConsumerConfig{Store: b.store, Client: cl, Specs: set, Owner: "t1", Interval: 100 * time.Millisecond, Logger: quiet})
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{
		Name: "gdal", Owner: "t1", Pool: b.pool, Runners: rs.Runners, Pairs: rs.Pairs, Rules: rs.Rules, PollInterval: 50 * time.Millisecond,
		Services: []engine.Service{{Name: "event consumer", Run: func(ctx context.Context) error { cons.Run(ctx, nil); return nil }}}, Logger: quiet,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	_, err = b.reg.AddAsset(b.ctx, store.NewAsset{CatalogID: "cat", ID: "DEM", URI: gdaltest.GeoTIFFUTM(t, b.files), Kind: store.AssetRaster})
	require.NoError(t, err)
	_, err = b.reg.AddAsset(b.ctx, store.NewAsset{CatalogID: "cat", ID: "README", URI: "readme.txt"})
	require.NoError(t, err)

	var task wftype.Task
	require.Eventually(t, func() bool {
		tasks, err := b.store.ListTasks(b.ctx, store.TaskFilter{TaskTypes: []string{gdal.HandlerName}, Limit: 10})
		require.NoError(t, err)
		if len(tasks) == 1 && tasks[0].Status.Terminal() {
			task = tasks[0]
			return true
		}
		return false
	}, 60*time.Second, 20*time.Millisecond)
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
