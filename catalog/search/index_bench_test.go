package search_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/search"
	"github.com/wfhq/wf/internal/esfake"
	"github.com/wfhq/wf/runners/runnertest"
)

// BenchmarkIndexDocuments times a full elasticsearch run over
// WF_BENCH_INDEX_FEATURES current features (default 50,000; points with
// three properties) into internal/esfake with the default bulk settings,
// and reports documents/s. It measures wf's side (reading the versions,
// building the documents, the bulk indexer's requests over loopback) and
// the fake's parsing, not a real cluster's indexing:
//
//	go run ./internal/dbtest/withdb -- go test -run '^$' -bench IndexDocuments -benchtime 3x ./catalog/search/
func BenchmarkIndexDocuments(b *testing.B) {
	n := catalogtest.BenchSize("WF_BENCH_INDEX_FEATURES", 50000)
	_, st := catalogtest.SeedPoints(b, "towns", json.RawMessage(`{"fields": {"name": "text", "pop": "integer"}}`), n)
	es := esfake.New()
	b.Cleanup(es.Close)
	h, err := search.New(search.Config{Store: st, Settings: search.Settings{Addresses: []string{es.URL}}})
	require.NoError(b, err)
	inputs := map[string]any{"catalog_id": "cat", "collection_id": "towns", "full": true}
	b.ResetTimer()
	for b.Loop() {
		out := catalogtest.Handle[search.Outputs](b, h.Index, catalogtest.NewTask(b, "s_cat", search.HandlerName, inputs), &runnertest.Counter{})
		require.Equal(b, int64(n), out.Indexed, "%+v", out)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}
