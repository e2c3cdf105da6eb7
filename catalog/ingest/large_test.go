package ingest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/export"
	"github.com/wfhq/wf/catalog/geom"
	"github.com/wfhq/wf/reporters"
)

// heapBound is the most live heap (after a GC) that ingesting or exporting
// the generated collection may use: a few batches in flight, whatever the
// file's size (about 70 MB for 200,000 features).
const heapBound = 32 << 20

// counter is a reporter that counts envelopes by status.
type counter struct{ success, rejected atomic.Int64 }

func (c *counter) Report(_ context.Context, env reporters.Envelope) error {
	if env.Status == reporters.RecordSuccess {
		c.success.Add(1)
	} else {
		c.rejected.Add(1)
	}
	return nil
}

func (c *counter) Finish(context.Context) (map[string]any, error) { return nil, nil }

// watchHeap samples the live heap (after a forced GC) until stopped and
// returns the largest sample.
func watchHeap(interval time.Duration) (stop func() uint64) {
	done := make(chan struct{})
	result := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				result <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-result }
}

// TestLargeIngestAndExport ingests 200,000 generated features from a
// GeoJSON file with the live heap asserted below heapBound, exports the
// collection as NDJSON (again within the bound) and compares the export
// with the source record by record. Under the race detector it uses 20,000
// features; -short skips it.
func TestLargeIngestAndExport(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the 200,000-feature round trip takes several seconds")
	}
	// Not parallel: the live heap it bounds is the whole test process's,
	// so it runs while no other test of the package allocates (go test
	// starts the parallel tests after the sequential ones).
	n := 200_000
	if raceEnabled {
		n = 20_000
	}
	b := setup(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "generated.geojson")
	size := writeGenerated(t, src, n)

	rep := &counter{}
	stopWatch := watchHeap(100 * time.Millisecond)
	started := time.Now()
	raw, err := b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": src, "format": "geojson", "id_attribute": "id"}), rep)
	took := time.Since(started)
	peak := stopWatch()
	require.NoError(t, err)
	t.Logf("ingested %d features (%.1f MB) in %s (%.0f features/s), peak live heap %.1f MiB (bound %d MiB)",
		n, float64(size)/1e6, took.Round(time.Millisecond), float64(n)/took.Seconds(), float64(peak)/(1<<20), heapBound>>20)
	require.Less(t, peak, uint64(heapBound))
	if !raceEnabled {
		require.Greater(t, size, int64(heapBound), "the file is larger than the heap bound, so the bound shows streaming")
	}
	require.Contains(t, string(raw), `"created":`+itoa(n))
	require.EqualValues(t, n, rep.success.Load())
	require.Zero(t, rep.rejected.Load())

	out := filepath.Join(dir, "export.ndjson")
	ex, err := export.New(export.Config{Store: b.store})
	require.NoError(t, err)
	task := newTask(t, map[string]any{"destination": out})
	stopWatch = watchHeap(100 * time.Millisecond)
	started = time.Now()
	_, err = ex.Handle(b.ctx, task, &counter{})
	took = time.Since(started)
	peak = stopWatch()
	require.NoError(t, err)
	t.Logf("exported %d features in %s, peak live heap %.1f MiB", n, took.Round(time.Millisecond), float64(peak)/(1<<20))
	require.Less(t, peak, uint64(heapBound))

	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	var line struct {
		Type       string          `json:"type"`
		ID         string          `json:"id"`
		Geometry   json.RawMessage `json:"geometry"`
		Properties json.RawMessage `json:"properties"`
		System     struct {
			ExternalID string `json:"external_id"`
			GeoID      string `json:"geoid"`
		} `json:"system"`
	}
	i := 0
	for ; sc.Scan(); i++ {
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		id, ring, props := generatedFeature(i)
		require.Equal(t, id, line.System.ExternalID, "record %d", i)
		require.Equal(t, line.ID, line.System.GeoID)
		require.Equal(t, "Feature", line.Type)
		g, err := geom.ParseGeoJSON(line.Geometry)
		require.NoError(t, err)
		require.Equal(t, orb.Polygon{ring}, g, "record %d", i)
		require.JSONEq(t, props, string(line.Properties), "record %d", i)
	}
	require.NoError(t, sc.Err())
	require.Equal(t, n, i)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
