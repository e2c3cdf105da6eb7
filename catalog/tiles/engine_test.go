package tiles_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// TestShippedSpec: tiles_preseed from the shipped specs/geodata.yaml runs
// through the engine, and its progress says tiles done of total.
func TestShippedSpec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	set, err := spec.Load(spec.Options{Builtins: builtins.Names()}, "../../specs/geodata.yaml")
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := builtin.NewRegistry()
	h, err := builtins.New(builtins.Deps{Store: b.store, LocalRoots: []string{b.dir}, Logger: quiet, TileCacheURL: "file://" + t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, h.Register(reg))
	rs, err := runnerset.Build(set, runnerset.Options{Registry: reg, DefaultVisibilityTimeout: time.Minute, Logger: quiet})
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{Name: "tiles", Owner: "t1", Pool: b.pool, Runners: rs.Runners, Pairs: rs.Pairs,
		Rules: rs.Rules, PollInterval: 50 * time.Millisecond, Logger: quiet})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	res, err := client.New(b.store, set).Enqueue(b.ctx, client.Request{TaskType: tiles.HandlerName, SchemaName: "s_cat",
		Inputs: json.RawMessage(`{"catalog_id": "cat", "collection_id": "places", "max_zoom": 4}`)})
	require.NoError(t, err)
	var task wftype.Task
	require.Eventually(t, func() bool {
		task, err = b.store.GetTask(b.ctx, res.Task.ID)
		require.NoError(t, err)
		return task.Status.Terminal()
	}, 60*time.Second, 20*time.Millisecond)
	require.Equal(t, wftype.StatusCompleted, task.Status, "error: %v", task.Error)
	var out tiles.PreseedOutputs
	require.NoError(t, json.Unmarshal(task.Outputs, &out))
	var progress struct {
		Tiles tiles.TileCounts `json:"tiles"`
	}
	require.NoError(t, json.Unmarshal(task.Progress, &progress))
	require.Equal(t, out.Tiles, progress.Tiles)
	require.Equal(t, progress.Tiles.Total, progress.Tiles.Done)
	require.Positive(t, progress.Tiles.Written)
}
