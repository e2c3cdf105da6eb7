package ingest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// BenchmarkIngest measures features per second from a local GeoJSON file
// into PostgreSQL: 100,000 generated polygons (6 to 12 vertices, four
// attributes) per iteration, each into a new collection, with a counting
// reporter. Run it with
//
//	go run ./engine/dbtest/withdb -- go test -run '^$' -bench Ingest -benchtime 3x ./engine/ingest/
func BenchmarkIngest(b *testing.B) {
	const n = 100_000
	pool := dbtest.NewPool(b)
	st := store.New(pool)
	ctx := context.Background()
	_, err := st.CreateCatalog(ctx, store.NewCatalog{ID: "cat", SchemaName: "s_cat"})
	require.NoError(b, err)
	src := filepath.Join(b.TempDir(), "bench.geojson")
	size := writeGenerated(b, src, n)
	h, err := ingest.New(ingest.Config{Store: st, Logger: quiet})
	require.NoError(b, err)
	var total time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		coll := fmt.Sprintf("bench%d", i)
		_, err := st.CreateCollection(ctx, store.NewCollection{CatalogID: "cat", ID: coll})
		require.NoError(b, err)
		task := newBenchTask(b, coll, src)
		b.StartTimer()
		started := time.Now()
		_, err = h.Handle(ctx, task, &counter{})
		total += time.Since(started)
		require.NoError(b, err)
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "features/s")
	b.ReportMetric(float64(size)/1e6, "MB/file")
}

// newBenchTask returns the ingestion task of one iteration.
func newBenchTask(b *testing.B, collection, src string) *wftype.Task {
	b.Helper()
	t := newTask(b, map[string]any{"source": src, "format": "geojson", "id_attribute": "id"})
	t.Inputs = fmt.Appendf(nil, `{"catalog_id":"cat","collection_id":%q,"source":%q,"format":"geojson","id_attribute":"id"}`, collection, src)
	return t
}
