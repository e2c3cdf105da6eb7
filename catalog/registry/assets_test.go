package registry_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestAssetEventsCarryNoCredentials: an asset whose URI holds a password
// and a signed query keeps them (its readers need them), but the
// asset.created and asset.updated events, which every subscriber and
// webhook receiver sees, carry the URI redacted.
func TestAssetEventsCarryNoCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	reg := registry.New(st, events.NewEmitter(st))
	_, err := reg.Create(ctx, registry.NewCatalog{ID: "cat-a"})
	require.NoError(t, err)

	const uri = "https://ingest:hunter2@data.example.com/parcels.gpkg?X-Goog-Signature=deadbeef&part=1"
	a, err := reg.AddAsset(ctx, store.NewAsset{CatalogID: "cat-a", ID: "parcels", URI: uri})
	require.NoError(t, err)
	require.Equal(t, uri, a.URI, "the asset keeps its URI")
	_, err = reg.RecordAsset(ctx, store.NewAsset{CatalogID: "cat-a", ID: "roads", URI: uri + "&token=t0ps3cret"})
	require.NoError(t, err)
	_, err = reg.RecordAsset(ctx, store.NewAsset{CatalogID: "cat-a", ID: "parcels", URI: uri + "&v=2"})
	require.NoError(t, err)

	rows, err := pool.Query(ctx, `SELECT event_type, payload->>'uri' FROM tasks.events WHERE event_type LIKE 'asset.%' ORDER BY created_at, event_id`)
	require.NoError(t, err)
	defer rows.Close()
	var seen []string
	for rows.Next() {
		var typ, got string
		require.NoError(t, rows.Scan(&typ, &got))
		seen = append(seen, typ)
		require.NotContains(t, got, "hunter2", typ)
		require.NotContains(t, got, "deadbeef", typ)
		require.NotContains(t, got, "t0ps3cret", typ)
		require.Contains(t, got, "https://ingest:REDACTED@data.example.com/parcels.gpkg?X-Goog-Signature=REDACTED&part=1", typ)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"asset.created", "asset.created", "asset.updated"}, seen)
}
