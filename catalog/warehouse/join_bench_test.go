package warehouse_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/warehouse"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/runners/runnertest"
)

// BenchmarkJoinPostgres times dwh_join over WF_BENCH_JOIN_ROWS features
// (default 100,000) and as many warehouse rows in a PostgreSQL table (every
// feature matches one row), exported as NDJSON to a local file; it reports
// rows/s (warehouse rows joined per second). The size:
//
//	WF_BENCH_JOIN_ROWS=1000000 go run ./internal/dbtest/withdb -- \
//	  go test -run '^$' -bench JoinPostgres -benchtime 1x ./catalog/warehouse/
func BenchmarkJoinPostgres(b *testing.B) {
	n := catalogtest.BenchSize("WF_BENCH_JOIN_ROWS", 100000)
	// Features written straight into the feature table (ingesting a million
	// would time the ingestion), and the warehouse table beside them.
	pool, st := catalogtest.SeedPoints(b, "parcels", nil, n)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `CREATE SCHEMA dwh;
		CREATE TABLE dwh.owners (pid bigint, owner text, share float8, since date)`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO dwh.owners SELECT i, 'owner ' || i, i % 100 / 10.0, date '2020-01-01' + i % 1000
		FROM generate_series(1, $1) i`, n)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `CREATE INDEX ON dwh.owners (pid); ANALYZE dwh.owners; ANALYZE s_cat.parcels`)
	require.NoError(b, err)

	root := b.TempDir()
	h, err := warehouse.New(warehouse.Config{Store: st, Objects: objio.New(objio.Config{LocalRoots: []string{root}}),
		Connections: []config.WarehouseConnection{{Name: "pg", Type: config.WarehousePostgres, URL: pool.Config().ConnString(),
			Catalogs: []string{"cat"}, Tables: []string{"dwh.owners"}}}})
	require.NoError(b, err)
	inputs := map[string]any{"catalog_id": "cat", "collection_id": "parcels", "connection": "pg",
		"table": "dwh.owners", "key": "pid", "destination": "joined.ndjson"}
	b.ResetTimer()
	for b.Loop() {
		rep := &runnertest.Counter{}
		out := catalogtest.Handle[warehouse.Outputs](b, h.Handle, catalogtest.NewTask(b, "s_cat", "dwh_join", inputs), rep)
		require.Equal(b, int64(n), out.Matched)
		require.Equal(b, n, rep.Count())
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
