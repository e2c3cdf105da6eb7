package ingest_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wftype"
)

// TestAssetRecordedOnlyOnceSourceOpened (issue 35 item 6): an ingestion
// whose source cannot be opened fails without recording its asset (nor
// emitting asset.created); one that opens its source records it.
func TestAssetRecordedOnlyOnceSourceOpened(t *testing.T) {
	t.Parallel()
	b := setup(t)
	missing := filepath.Join(t.TempDir(), "typo.geojson")
	_, err := b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": missing, "format": "geojson", "id_attribute": "code", "asset_id": "A1"}), &capture{})
	require.Error(t, err)
	requirePermanent(t, err)
	_, err = b.store.GetAsset(b.ctx, "cat", "A1")
	require.ErrorIs(t, err, wftype.ErrNotFound, "a source that did not open left an asset")
	var created int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.events WHERE event_type = 'asset.created'`).Scan(&created))
	require.Zero(t, created)

	path := writeFile(t, "ok.geojson", `{"type": "FeatureCollection", "features": [
{"type": "Feature", "properties": {"code": "a"}, "geometry": {"type": "Point", "coordinates": [1, 2]}}]}`)
	b.ingestFile(t, map[string]any{"source": path, "format": "geojson", "id_attribute": "code", "asset_id": "A1"})
	a, err := b.store.GetAsset(b.ctx, "cat", "A1")
	require.NoError(t, err)
	require.Equal(t, path, a.URI)
}
