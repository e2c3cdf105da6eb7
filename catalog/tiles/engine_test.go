package tiles_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/wftype"
)

// TestShippedSpec: tiles_preseed from the shipped specs/geodata.yaml runs
// through the engine, and its progress says tiles done of total.
func TestShippedSpec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	set := catalogtest.StartEngine(t, b.pool, builtins.Deps{Store: b.store, LocalRoots: []string{b.dir}, TileCacheURL: "file://" + t.TempDir()},
		"../../specs/geodata.yaml")

	res, err := client.New(b.store, set).Enqueue(b.ctx, client.Request{TaskType: tiles.HandlerName, SchemaName: "s_cat",
		Inputs: json.RawMessage(`{"catalog_id": "cat", "collection_id": "places", "max_zoom": 4}`)})
	require.NoError(t, err)
	task := catalogtest.WaitEnded(t, b.store, tiles.HandlerName, 1)[0]
	require.Equal(t, res.Task.ID, task.ID)
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
