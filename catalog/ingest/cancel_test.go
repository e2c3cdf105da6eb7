package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
)

// cancelAfter is a reporter that cancels its ingestion once it has seen n
// records: each record is reported after its batch was merged, so by then
// at least one batch is written in the load's transaction.
type cancelAfter struct {
	n      int64
	seen   atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Report(context.Context, reporters.Envelope) error {
	if c.seen.Add(1) == c.n {
		c.cancel()
	}
	return nil
}

func (c *cancelAfter) Finish(context.Context) (map[string]any, error) { return nil, nil }

// tableState is what a cancelled load must leave as it was: every row with
// its validity and hashes, and the table's content version.
func (b *bundle) tableState(t *testing.T) (string, string) {
	t.Helper()
	var rows string
	require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT coalesce(string_agg(format('%s %s %s %s %s', external_id, geoid, validity, transaction_time, attributes_hash), E'\n'
                           ORDER BY external_id, transaction_time), '')
FROM s_cat.regions`).Scan(&rows))
	version, err := b.store.FeaturesVersion(b.ctx, store.FeatureTable{Schema: "s_cat", Collection: "regions"})
	require.NoError(t, err)
	return rows, version
}

// cancelIngestion runs an ingestion of inputs that is cancelled after n
// reported records, and requires that it failed for the cancellation.
func (b *bundle) cancelIngestion(t *testing.T, inputs map[string]any, n int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	rep := &cancelAfter{n: n, cancel: cancel}
	_, err := b.handler.Handle(ctx, newTask(t, inputs), rep)
	require.Error(t, err)
	require.True(t, errors.Is(err, context.Canceled), "want the cancellation, got %v", err)
	require.GreaterOrEqual(t, rep.seen.Load(), n, "the load was cancelled before a batch was merged")
}

// TestCancelledIngestionLeavesCollection: an ingestion cancelled after some
// of its batches were merged leaves the collection exactly as it was, for
// a collection holding versions (none closed, none added, its content
// version unchanged) and for an empty one (no row, its indexes built), on
// the GeoJSON and on the GDAL path; the same source ingested afterwards
// goes through as usual.
func TestCancelledIngestionLeavesCollection(t *testing.T) {
	t.Parallel()
	const n = 1600 // the bundle's batches hold 500 records
	renamed := func(i int) string { return squareFeature(i, 0.1, fmt.Sprintf("renamed %d", i), "1000", false, false) }
	paths := []struct {
		name   string
		format string
	}{{"ndjson", "ndjson"}, {"gdal", "gdal"}}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			if p.format == "gdal" {
				if _, err := exec.LookPath("ogr2ogr"); err != nil {
					t.Skip("GDAL's ogr2ogr is not installed")
				}
			}
			b := setup(t)
			src := squares(t, n, renamed)
			inputs := func(from string) map[string]any {
				return map[string]any{"source": src, "format": p.format, "id_attribute": "code", "validity_start": from}
			}

			// An empty collection stays empty, with its indexes.
			b.cancelIngestion(t, inputs("2024-01-01T00:00:00Z"), 700)
			rows, current := b.count(t)
			require.Zero(t, rows)
			require.Zero(t, current)
			var indexes int
			require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = 's_cat' AND tablename = 'regions'`).Scan(&indexes))
			require.Equal(t, 4, indexes, "primary key, current, geoid and geom")

			// A collection with versions keeps them as they were.
			first := squares(t, n, nil)
			out, _ := b.ingestFile(t, map[string]any{"source": first, "format": p.format, "id_attribute": "code", "validity_start": "2024-01-01T00:00:00Z"})
			require.EqualValues(t, n, out.Features.Created)
			before, version := b.tableState(t)
			b.cancelIngestion(t, inputs("2025-01-01T00:00:00Z"), 1100)
			after, versionAfter := b.tableState(t)
			require.Equal(t, before, after)
			require.Equal(t, version, versionAfter)

			// Nothing is left locked or half done: the same load now goes through.
			out, _ = b.ingestFile(t, inputs("2025-01-01T00:00:00Z"))
			require.EqualValues(t, n, out.Features.Versioned)
			rows, current = b.count(t)
			require.Equal(t, 2*n, rows)
			require.Equal(t, n, current)
		})
	}
}

// TestRepeatedIDsInOneLoad: into an empty collection, where a load looks up
// only the external ids its earlier batches wrote, a record whose id came
// batches before merges against it: unchanged when equal, refused when it
// changes without a later validity start.
func TestRepeatedIDsInOneLoad(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 1200 // the bundle's batches hold 500 records
	var lines []string
	for i := range n {
		lines = append(lines, squareFeature(i, 0.1, fmt.Sprintf("region %d", i), "1000", false, false))
	}
	for i := range 5 {
		lines = append(lines, squareFeature(i, 0.1, fmt.Sprintf("region %d", i), "1000", false, false))
		lines = append(lines, squareFeature(100+i, 0.2, "moved", "1000", false, false))
	}
	src := writeFile(t, "repeats.ndjson", strings.Join(lines, "\n")+"\n")
	out, _ := b.ingestFile(t, map[string]any{"source": src, "format": "ndjson", "id_attribute": "code"})
	require.Equal(t, ingest.Counts{Read: n + 10, Created: n, Unchanged: 5, Rejected: 5}, out.Features)
	rows, current := b.count(t)
	require.Equal(t, n, rows)
	require.Equal(t, n, current)
}
