package gcsreporter_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/gcsreporter"
)

// heapBound is the most Go heap in use (after a GC) that reporting a
// million records may take, report buffer included.
const heapBound = 64 << 20

// TestMillionRecordsBoundedHeap reports a million small records from several
// goroutines and checks that the heap stays bounded (the report spills to a
// temporary file) and that the object holds every record once.
//
// It does not call t.Parallel on purpose: the heap is the whole process's,
// and parallel tests wait until the sequential ones are done, so this test
// measures the reporter alone.
func TestMillionRecordsBoundedHeap(t *testing.T) {
	n, memory := 1_000_000, 0 // the default memory limit
	if raceEnabled {
		// The race detector makes encoding and compression ~10x slower: a
		// tenth of the records, with a smaller buffer so that they still spill.
		n, memory = 100_000, 1<<20
	}
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("Gzip=%t", gz), func(t *testing.T) {
			dir := t.TempDir()
			store := openStore(t, gcsreporter.Config{BucketURL: "file://" + filepath.ToSlash(dir), TempDir: t.TempDir(), Gzip: gz, MemoryLimit: memory})
			task := reporters.TaskInfo{ID: uuid.Must(uuid.NewV7()), SchemaName: "tenant_a", TaskType: "ingest"}
			rep, err := store.NewReporter(task)
			require.NoError(t, err)

			base := heapInUse()
			sampler := startHeapSampler(20 * time.Millisecond)
			const goroutines = 4
			var wg sync.WaitGroup
			errs := make([]error, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					for i := g; i < n; i += goroutines {
						env := reporters.Success(reporters.Record{
							Type: "Feature", ID: strconv.Itoa(i),
							Properties: map[string]any{"n": i},
						})
						if err := rep.Report(t.Context(), env); err != nil {
							errs[g] = err
							return
						}
					}
				})
			}
			wg.Wait()
			out, err := rep.Finish(t.Context())
			peak := sampler.stop()
			for _, err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, err)
			require.EqualValues(t, n, out["report_records"])
			t.Logf("%d records, gzip %t: heap in use %.1f MiB before, at most %.1f MiB while reporting and finishing (bound %d MiB)",
				n, gz, mib(base), mib(peak), heapBound>>20)
			require.Less(t, peak, uint64(heapBound))

			// Every record is in the object exactly once.
			u, err := url.Parse(out["report_url"].(string))
			require.NoError(t, err)
			f, err := os.Open(filepath.FromSlash(u.Path))
			require.NoError(t, err)
			defer f.Close()
			var r io.Reader = f
			if gz {
				zr, err := gzip.NewReader(f)
				require.NoError(t, err)
				r = zr
			}
			seen := make([]bool, n)
			sc := bufio.NewScanner(r)
			lines := 0
			for sc.Scan() {
				lines++
				var line struct {
					Status reporters.RecordStatus `json:"status"`
					Record struct {
						ID string `json:"id"`
					} `json:"record"`
				}
				require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
				i, err := strconv.Atoi(line.Record.ID)
				require.NoError(t, err)
				require.False(t, seen[i], "record %d twice", i)
				seen[i] = true
			}
			require.NoError(t, sc.Err())
			require.Equal(t, n, lines)
		})
	}
}

// heapInUse returns the bytes of heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// heapSampler measures heapInUse periodically and keeps the peak.
type heapSampler struct {
	done chan struct{}
	peak chan uint64
}

// startHeapSampler starts sampling every interval.
func startHeapSampler(interval time.Duration) *heapSampler {
	s := &heapSampler{done: make(chan struct{}), peak: make(chan uint64)}
	go func() {
		var peak uint64
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			peak = max(peak, heapInUse())
			select {
			case <-s.done:
				s.peak <- max(peak, heapInUse())
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends sampling and returns the peak.
func (s *heapSampler) stop() uint64 {
	close(s.done)
	return <-s.peak
}

// mib converts bytes to MiB.
func mib(b uint64) float64 { return float64(b) / (1 << 20) }
