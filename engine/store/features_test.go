package store_test

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// registerCollection creates a catalog with schema and one collection.
func registerCollection(t *testing.T, b *bundle, catalog, schema, collection string) store.FeatureTable {
	t.Helper()
	if _, err := b.store.GetCatalog(b.ctx, catalog); err != nil {
		_, err := b.store.CreateCatalog(b.ctx, store.NewCatalog{ID: catalog, SchemaName: schema})
		require.NoError(t, err)
	}
	_, err := b.store.CreateCollection(b.ctx, store.NewCollection{CatalogID: catalog, ID: collection})
	require.NoError(t, err)
	ft, err := b.store.ResolveFeatureTable(b.ctx, catalog, collection)
	require.NoError(t, err)
	require.NoError(t, b.store.CreateFeatureTable(b.ctx, ft))
	return ft
}

// version returns a feature version of a point with one attribute value.
func version(t *testing.T, extID string, x float64, attr string, from time.Time) store.FeatureVersion {
	t.Helper()
	id, _, err := store.NewID()
	require.NoError(t, err)
	return store.FeatureVersion{
		GeoID: id, ExternalID: extID,
		WKB:        pointWKB(x, 1),
		Properties: []byte(`{"a":"` + attr + `"}`), Stats: []byte(`{}`),
		GeometryHash: "g" + strconv.FormatFloat(x, 'f', -1, 64), AttributesHash: "a" + attr, ValidFrom: from,
	}
}

// pointWKB returns the little-endian WKB of a point.
func pointWKB(x, y float64) []byte {
	b := []byte{1, 1, 0, 0, 0}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

func TestFeatureTableNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 63)
	for _, ok := range [][2]string{{long, "c"}, {"s", long}} {
		_, err := store.NewFeatureTable(ok[0], ok[1])
		require.NoError(t, err, "63 bytes: %v", ok)
	}
	for _, bad := range [][2]string{{"public", "c"}, {"catalog", "c"}, {"pg_toast", "c"}, {"system", "c"}, {"S", "c"}, {"s", "_c"}, {"s", `c"; drop`},
		{long + "a", "c"}, {"s", long + "a"}} {
		_, err := store.NewFeatureTable(bad[0], bad[1])
		require.ErrorIs(t, err, store.ErrInvalidFeatureTable, "%v", bad)
	}
	ft, err := store.NewFeatureTable("s_a", "roads-2024")
	require.NoError(t, err)
	require.Equal(t, "s_a.roads-2024", ft.String())
}

func TestFeatureTableCreateIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("x", 60) + "-ab"
	_, err := b.store.CreateCatalog(b.ctx, store.NewCatalog{ID: "cat", SchemaName: "s_cat"})
	require.NoError(t, err)
	var wg sync.WaitGroup
	collections := []string{long, strings.Repeat("x", 60) + "-ac", "a"}
	const workers = 8
	// Room for every error: a send that blocked would hang the test (it did,
	// for 10 minutes, where PostGIS was missing and every create failed).
	errs := make(chan error, workers*len(collections))
	for range workers {
		wg.Go(func() {
			for _, c := range collections {
				ft, err := store.NewFeatureTable("s_cat", c)
				if err == nil {
					err = b.store.CreateFeatureTable(b.ctx, ft)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var indexes int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = 's_cat'`).Scan(&indexes))
	require.Equal(t, 3*4, indexes, "pk, current, geoid and geom (GiST) for each of the three tables")
	ft, err := store.NewFeatureTable("s_cat", long)
	require.NoError(t, err)
	ok, err := b.store.FeatureTableExists(b.ctx, ft)
	require.NoError(t, err)
	require.True(t, ok)
}

func TestMergeFeatures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ft := registerCollection(t, b, "cat", "s_cat", "roads")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.AddDate(1, 0, 0)

	out, tx0, err := b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "a", 1, "x", t0), version(t, "b", 2, "y", t0)})
	require.NoError(t, err)
	require.Equal(t, store.MergeCreated, out[0].Action)
	require.Equal(t, store.MergeCreated, out[1].Action)
	require.Equal(t, tx0, out[0].TransactionTime)
	geoA := out[0].GeoID

	// Same content: unchanged, whatever the start; changed content later:
	// versioned with the same geoid; changed content not later: conflict.
	same := version(t, "a", 1, "x", t1)
	changed := version(t, "b", 2, "z", t1)
	out, _, err = b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{same, changed, version(t, "c", 3, "w", t1)})
	require.NoError(t, err)
	require.Equal(t, store.MergeUnchanged, out[0].Action)
	require.Equal(t, geoA, out[0].GeoID)
	require.Equal(t, tx0, out[0].TransactionTime)
	require.Equal(t, t0, out[0].ValidFrom)
	require.Equal(t, store.MergeVersioned, out[1].Action)
	require.Equal(t, t1, out[1].ValidFrom)
	require.Equal(t, store.MergeCreated, out[2].Action)

	out, _, err = b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "b", 2, "q", t1)})
	require.NoError(t, err)
	require.Equal(t, store.MergeConflict, out[0].Action)

	var rows, current int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*), count(*) FILTER (WHERE upper_inf(validity)) FROM "s_cat"."roads"`).Scan(&rows, &current))
	require.Equal(t, 4, rows)
	require.Equal(t, 3, current)

	// Current versions, as of a time, and a bbox filter.
	scan := func(f store.FeatureFilter) []string {
		var got []string
		_, err := b.store.ScanFeatures(b.ctx, ft, f, func(r *store.FeatureRow) error {
			got = append(got, r.ExternalID+":"+store.ValidityLiteral(r.ValidFrom, r.ValidTo)+":"+string(r.Properties))
			return nil
		})
		require.NoError(t, err)
		return got
	}
	require.Equal(t, []string{
		`a:[2024-01-01T00:00:00Z,):{"a": "x"}`,
		`b:[2025-01-01T00:00:00Z,):{"a": "z"}`,
		`c:[2025-01-01T00:00:00Z,):{"a": "w"}`,
	}, scan(store.FeatureFilter{BatchSize: 1}))
	mid := t0.AddDate(0, 6, 0)
	require.Equal(t, []string{
		`a:[2024-01-01T00:00:00Z,):{"a": "x"}`,
		`b:[2024-01-01T00:00:00Z,2025-01-01T00:00:00Z):{"a": "y"}`,
	}, scan(store.FeatureFilter{AsOf: &mid, BatchSize: 2}))
	require.Equal(t, []string{`b:[2025-01-01T00:00:00Z,):{"a": "z"}`}, scan(store.FeatureFilter{BBox: &[4]float64{1.5, 0, 2, 5}}))
}

func TestDropFeatureTables(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ft := registerCollection(t, b, "cat", "s_cat", "roads")
	other := registerCollection(t, b, "cat", "s_cat", "rivers")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _, err := b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "a", 1, "x", t0)})
	require.NoError(t, err)

	// The collection is registered again before the drop runs: only the
	// old rows go.
	_, err = b.store.DeleteCollection(b.ctx, "cat", "roads")
	require.NoError(t, err)
	_, err = b.store.CreateCollection(b.ctx, store.NewCollection{CatalogID: "cat", ID: "roads"})
	require.NoError(t, err)
	_, _, err = b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "new", 1, "x", t0)})
	require.NoError(t, err)
	res, err := b.store.DropFeatureTable(b.ctx, "cat", ft)
	require.NoError(t, err)
	require.Equal(t, store.DropPurged, res.Outcome)
	require.EqualValues(t, 1, res.Purged)

	// Deleted for good: the table goes; a second drop finds nothing.
	_, err = b.store.DeleteCollection(b.ctx, "cat", "roads")
	require.NoError(t, err)
	res, err = b.store.DropFeatureTable(b.ctx, "cat", ft)
	require.NoError(t, err)
	require.Equal(t, store.DropDropped, res.Outcome)
	res, err = b.store.DropFeatureTable(b.ctx, "cat", ft)
	require.NoError(t, err)
	require.Equal(t, store.DropAbsent, res.Outcome)

	// The schema of a catalog the registry holds is never dropped; once the
	// catalog is deleted it is.
	_, err = b.store.DropTenantSchema(b.ctx, "cat", "s_cat", []string{"roads"})
	require.ErrorIs(t, err, store.ErrNotDeleted)
	_, err = b.store.DropFeatureTable(b.ctx, "cat", other)
	require.ErrorIs(t, err, store.ErrNotDeleted)
	_, _, err = b.store.DeleteCatalog(b.ctx, "cat")
	require.NoError(t, err)
	// The deletion is recorded with the schema the catalog had: another
	// schema named in a drop is refused.
	_, err = b.store.DropTenantSchema(b.ctx, "cat", "s_other", nil)
	require.ErrorIs(t, err, store.ErrNotDeleted)
	sres, err := b.store.DropTenantSchema(b.ctx, "cat", "s_cat", []string{"rivers"})
	require.NoError(t, err)
	require.Equal(t, store.DropDropped, sres.Outcome)
	ok, err := b.store.FeatureTableExists(b.ctx, other)
	require.NoError(t, err)
	require.False(t, ok)

	_, err = b.store.DropTenantSchema(context.Background(), "cat", "tasks", nil)
	require.ErrorIs(t, err, store.ErrInvalidFeatureTable)
}

// TestFeatureTablesOwnership: wf writes into and drops only the schemas and
// tables it created, and a catalog cannot be registered on a schema that
// exists without wf having created it.
func TestFeatureTablesOwnership(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.pool.Exec(b.ctx, `CREATE SCHEMA s_foreign; CREATE TABLE s_foreign.roads (id int); CREATE TABLE s_foreign.keep (id int)`)
	require.NoError(t, err)

	_, err = b.store.CreateCatalog(b.ctx, store.NewCatalog{ID: "foreign", SchemaName: "s_foreign"})
	require.ErrorIs(t, err, store.ErrNotOwned)
	require.ErrorIs(t, err, wftype.ErrConflict)

	ft, err := store.NewFeatureTable("s_foreign", "roads")
	require.NoError(t, err)
	require.ErrorIs(t, b.store.CreateFeatureTable(b.ctx, ft), store.ErrNotOwned)

	// Even with a recorded deletion, a schema wf did not create is not dropped.
	_, err = b.pool.Exec(b.ctx, `INSERT INTO catalog.deletions (catalog_id, schema_name) VALUES ('gone', 's_foreign')`)
	require.NoError(t, err)
	_, err = b.store.DropTenantSchema(b.ctx, "gone", "s_foreign", []string{"roads"})
	require.ErrorIs(t, err, store.ErrNotOwned)
	_, err = b.store.DropFeatureTable(b.ctx, "gone", ft)
	require.ErrorIs(t, err, store.ErrNotOwned)

	// A table someone added to a schema wf created keeps that schema.
	mine := registerCollection(t, b, "mine", "s_mine", "roads")
	_, err = b.pool.Exec(b.ctx, `CREATE TABLE s_mine.extra (id int)`)
	require.NoError(t, err)
	_, _, err = b.store.DeleteCatalog(b.ctx, "mine")
	require.NoError(t, err)
	_, err = b.store.DropTenantSchema(b.ctx, "mine", "s_mine", []string{"roads"})
	require.ErrorIs(t, err, store.ErrNotOwned)
	ok, err := b.store.FeatureTableExists(b.ctx, mine)
	require.NoError(t, err)
	require.True(t, ok)

	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_tables WHERE schemaname IN ('s_foreign', 's_mine')`).Scan(&n))
	require.Equal(t, 4, n, "nothing was dropped")
}

// TestCursorReadsOfDifferentShapesShareAConnection runs two cursor reads
// with different columns (a plain scan, then a keyed scan with two more)
// on one connection, with the same batch size. Every cursor has the same
// name, so a FETCH served from the statement cache failed the second with
// "bind message has 12 result formats but query has 14 columns" (dwh_join
// retried once after an earlier read on its connection).
func TestCursorReadsOfDifferentShapesShareAConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.pool.Config()
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(b.ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(one.Close)
	s := store.New(one)
	ft := registerCollection(t, b, "cat", "s_cat", "roads")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _, err = s.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "a", 1, "x", t0), version(t, "b", 2, "y", t0)})
	require.NoError(t, err)
	for range 2 {
		n, err := s.ScanFeatures(b.ctx, ft, store.FeatureFilter{BatchSize: 10}, func(*store.FeatureRow) error { return nil })
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		var keys []string
		n, err = s.ScanFeaturesByKey(b.ctx, ft, "a", false, 10, func(f *store.KeyedFeature) error {
			keys = append(keys, f.Key)
			return nil
		})
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		require.Equal(t, []string{"x", "y"}, keys)
	}
}
