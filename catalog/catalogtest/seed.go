package catalogtest

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// SeedPoints gives a benchmark its own database (internal/dbtest) and a
// store on it, registers catalog "cat" (tenant s_cat) with collection
// collection (its layer_config given) and writes n current point features
// straight into its feature table, for benchmarks that must not time an
// ingestion: external ids P1…Pn, properties {"pid": i, "name": "Feature
// i", "pop": i}.
func SeedPoints(t testing.TB, collection string, layerConfig json.RawMessage, n int) (*pgxpool.Pool, *store.Store) {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	_, err := st.CreateCatalog(ctx, store.NewCatalog{ID: "cat", SchemaName: "s_cat"})
	require.NoError(t, err)
	_, err = st.CreateCollection(ctx, store.NewCollection{CatalogID: "cat", ID: collection, LayerConfig: layerConfig})
	require.NoError(t, err)
	ft, err := store.NewFeatureTable("s_cat", collection)
	require.NoError(t, err)
	require.NoError(t, st.CreateFeatureTable(ctx, ft))
	table := pgx.Identifier{ft.Schema, ft.Collection}.Sanitize()
	_, err = pool.Exec(ctx, `
INSERT INTO `+table+` (geoid, external_id, geom, properties, geometry_hash, attributes_hash, validity)
SELECT gen_random_uuid(), 'P' || i,
       ST_SetSRID(ST_MakePoint(7 + i / 1e7, 45), 4326),
       jsonb_build_object('pid', i, 'name', 'Feature ' || i, 'pop', i), md5(i::text), md5('a' || i), tstzrange(now(), NULL)
FROM generate_series(1, $1) i`, n)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE `+table)
	require.NoError(t, err)
	return pool, st
}

// BenchSize is the whole number in the environment variable name (a
// benchmark's size, e.g. WF_BENCH_JOIN_ROWS=1000000), or def when it is
// unset or not a positive number.
func BenchSize(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
