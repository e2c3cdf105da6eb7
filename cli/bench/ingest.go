package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// IngestResult is wf's ingestion beside `ogr2ogr -f PostgreSQL` on the
// same files and database (ModeIngest).
type IngestResult struct {
	// Features is how many polygons each file holds; Rounds how many times
	// each side loaded each file, alternating which goes first.
	Features int `json:"features"`
	Rounds   int `json:"rounds"`
	// Paths are the GDAL path (a GeoPackage in EPSG:32633) and the GeoJSON path.
	Paths []IngestPath `json:"paths"`
}

// IngestPath is one file loaded by both sides.
type IngestPath struct {
	Name string `json:"name"`
	// WF and Ogr2ogr are the rounds of each side, in order.
	WF      []IngestRun `json:"wf"`
	Ogr2ogr []IngestRun `json:"ogr2ogr"`
	// WFRate and OgrRate are the medians of the rounds' features/s; Ratio
	// is WFRate / OgrRate (≥ 1: wf is at least as fast).
	WFRate  float64 `json:"wf_rate"`
	OgrRate float64 `json:"ogr2ogr_rate"`
	Ratio   float64 `json:"ratio"`
}

// IngestRun is one load: wall time and rate, and the CPU seconds of each
// part (the bench process, its children: GDAL's commands, the PostgreSQL
// server), which say what the work costs when the machine is busy; PeakRSSMB
// is the bench process's largest resident memory sampled during a wf run.
type IngestRun struct {
	Seconds   float64 `json:"seconds"`
	Rate      float64 `json:"rate"`
	GoCPU     float64 `json:"go_cpu_s"`
	GDALCPU   float64 `json:"gdal_cpu_s"`
	PGCPU     float64 `json:"pg_cpu_s"`
	PeakRSSMB float64 `json:"peak_rss_mb,omitempty"`
}

// ingestSources is a run's two files.
type ingestSources struct {
	gpkg, geojson string
}

// ingestBench runs ModeIngest: it writes the files, then loads each
// Rounds times with wf (the ingestion handler, in process, as a task of
// tenant s_bench) and with ogr2ogr, alternating which goes first.
func ingestBench(ctx context.Context, e *env, res *Result) error {
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		return fmt.Errorf("the ingest bench needs GDAL's ogr2ogr on the PATH (Debian: apt-get install gdal-bin): %w", err)
	}
	if err := e.store.EnsurePostGIS(ctx); err != nil {
		return err
	}
	if _, err := e.store.CreateCatalog(ctx, store.NewCatalog{ID: "bench", SchemaName: "s_bench"}); err != nil {
		return err
	}
	n := e.cfg.Features
	e.cfg.Logger.Info("writing the sources", "features", n)
	src, err := writeIngestSources(ctx, e.workDir, n)
	if err != nil {
		return err
	}
	h, err := ingest.New(ingest.Config{Store: e.store, ScratchDir: e.workDir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	pgConn, err := ogrConnection(e.dbURL)
	if err != nil {
		return err
	}
	out := &IngestResult{Features: n, Rounds: e.cfg.Rounds}
	paths := []struct {
		name, file, format, layer string
		reproject                 bool
	}{
		{"GDAL path: GeoPackage in EPSG:32633 (`format: gdal`)", src.gpkg, "gdal", "parcels", true},
		{"GeoJSON path: a FeatureCollection in EPSG:4326 (`format: geojson`)", src.geojson, "geojson", "", false},
	}
	var runs atomic.Int64
	for k, p := range paths {
		ip := IngestPath{Name: p.name}
		stopProfile, err := startIngestProfile(e.cfg.CPUProfile, k, p.format)
		if err != nil {
			return err
		}
		for round := range e.cfg.Rounds {
			wf := func() error {
				coll := fmt.Sprintf("wf%d", runs.Add(1))
				if _, err := e.store.CreateCollection(ctx, store.NewCollection{CatalogID: "bench", ID: coll}); err != nil {
					return err
				}
				r, err := measureIngestRun(ctx, e, n, true, func() error {
					return runWFIngestion(ctx, h, coll, p.file, p.format)
				})
				ip.WF = append(ip.WF, r)
				e.cfg.Logger.Info("wf ingestion", "path", p.format, "round", round+1, "features/s", math.Round(r.Rate), "seconds", r.Seconds)
				return err
			}
			ogr := func() error {
				args := []string{"-f", "PostgreSQL", pgConn, p.file}
				if p.layer != "" {
					args = append(args, p.layer)
				}
				args = append(args, "-nln", fmt.Sprintf("ogr%d", runs.Add(1)),
					"-lco", "GEOMETRY_NAME=geom", "-lco", "SPATIAL_INDEX=GIST", "--config", "PG_USE_COPY", "YES")
				if p.reproject {
					args = append(args, "-t_srs", "EPSG:4326")
				}
				r, err := measureIngestRun(ctx, e, n, false, func() error {
					cmd := exec.CommandContext(ctx, "ogr2ogr", args...)
					if b, err := cmd.CombinedOutput(); err != nil {
						return fmt.Errorf("error running ogr2ogr: %w: %s", err, oneLine(string(b), 300))
					}
					return nil
				})
				ip.Ogr2ogr = append(ip.Ogr2ogr, r)
				e.cfg.Logger.Info("ogr2ogr", "path", p.format, "round", round+1, "features/s", math.Round(r.Rate), "seconds", r.Seconds)
				return err
			}
			first, second := wf, ogr
			if round%2 == 1 {
				first, second = ogr, wf
			}
			if err := first(); err != nil {
				stopProfile()
				return err
			}
			if err := second(); err != nil {
				stopProfile()
				return err
			}
		}
		stopProfile()
		ip.WFRate, ip.OgrRate = medianRate(ip.WF), medianRate(ip.Ogr2ogr)
		if ip.OgrRate > 0 {
			ip.Ratio = ip.WFRate / ip.OgrRate
		}
		out.Paths = append(out.Paths, ip)
	}
	res.Ingest = out
	return nil
}

// startIngestProfile starts a CPU profile of the k-th path's loads when
// base is set (base itself for the first path, base.<format> for the
// others: ogr2ogr's runs cost this process nothing, so the profile is
// wf's); the returned function stops it and is safe to call twice.
func startIngestProfile(base string, k int, format string) (func(), error) {
	if base == "" {
		return func() {}, nil
	}
	name := base
	if k > 0 {
		name = base + "." + format
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("error creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("error starting the CPU profile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}

// measureIngestRun times one load after a checkpoint, with the CPU of each
// part; sampleRSS samples this process's resident memory meanwhile.
func measureIngestRun(ctx context.Context, e *env, n int, sampleRSS bool, load func() error) (IngestRun, error) {
	e.checkpoint(ctx, e.store)
	pid := e.postmasterPID()
	self, child, pg := selfUsage(), childrenUsage(), processTreeCPU(pid)
	var peakKB atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		if !sampleRSS {
			return
		}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, _ := processRSS(os.Getpid()); rss > peakKB.Load() {
				peakKB.Store(rss)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	started := time.Now()
	err := load()
	took := time.Since(started)
	close(stop)
	<-sampled
	r := IngestRun{
		Seconds: took.Seconds(), Rate: float64(n) / took.Seconds(),
		GoCPU: selfUsage().CPU().Seconds() - self.CPU().Seconds(), GDALCPU: childrenUsage().CPU().Seconds() - child.CPU().Seconds(),
		PGCPU: (processTreeCPU(pid) - pg).Seconds(), PeakRSSMB: float64(peakKB.Load()) / 1024,
	}
	return r, err
}

// runWFIngestion runs the ingestion handler on file into collection coll.
func runWFIngestion(ctx context.Context, h *ingest.Handler, coll, file, format string) error {
	id, ts, err := store.NewID()
	if err != nil {
		return err
	}
	inputs := fmt.Appendf(nil, `{"catalog_id":"bench","collection_id":%q,"source":%q,"format":%q,"id_attribute":"code"}`, coll, file, format)
	task := &wftype.Task{ID: id, Timestamp: ts, SchemaName: "s_bench", Scope: wftype.ScopeCatalog,
		ExecutionMode: wftype.ModeAsync, TaskType: "ingestion", Inputs: inputs}
	if _, err := h.Handle(ctx, task, reporters.Discard{}); err != nil {
		return fmt.Errorf("error ingesting %s: %w", file, err)
	}
	return nil
}

// medianRate is the median of the runs' rates.
func medianRate(runs []IngestRun) float64 {
	if len(runs) == 0 {
		return 0
	}
	rates := make([]float64, len(runs))
	for i, r := range runs {
		rates[i] = r.Rate
	}
	slices.Sort(rates)
	if len(rates)%2 == 1 {
		return rates[len(rates)/2]
	}
	return (rates[len(rates)/2-1] + rates[len(rates)/2]) / 2
}

// ogrConnection is GDAL's "PG:" connection string of a database URL.
func ogrConnection(url string) (string, error) {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return "", fmt.Errorf("error reading the bench database URL: %w", err)
	}
	s := fmt.Sprintf("PG:host=%s port=%d dbname=%s user=%s", cc.Host, cc.Port, cc.Database, cc.User)
	if cc.Password != "" {
		s += " password=" + cc.Password
	}
	return s, nil
}

// writeIngestSources writes the bench's files in dir: n small square
// polygons on a grid with three attributes each (code, row, name), as a
// GeoPackage in EPSG:32633 (UTM 33N, metres: the GDAL path reprojects) and
// as a GeoJSON FeatureCollection in EPSG:4326 (10°E 45°N).
func writeIngestSources(ctx context.Context, dir string, n int) (ingestSources, error) {
	side := int(math.Ceil(math.Sqrt(float64(n))))
	src := ingestSources{gpkg: filepath.Join(dir, "parcels.gpkg"), geojson: filepath.Join(dir, "parcels.geojson")}
	seq := filepath.Join(dir, "parcels-32633.geojsons")
	write := func(path string, head, sep, tail string, feature func(w *bufio.Writer, i, j int)) error {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("error writing %s: %w", path, err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		w.WriteString(head)
		for k := range n {
			if k > 0 {
				w.WriteString(sep)
			}
			feature(w, k/side, k%side)
		}
		w.WriteString(tail)
		if err := w.Flush(); err != nil {
			f.Close()
			return fmt.Errorf("error writing %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("error writing %s: %w", path, err)
		}
		return nil
	}
	square := func(w *bufio.Writer, i, j int, x, y, s float64, prec int) {
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
		fmt.Fprintf(w, `{"type":"Feature","properties":{"code":"p%d_%d","row":%d,"name":"parcel %d"},"geometry":{"type":"Polygon","coordinates":[[[%s,%s],[%s,%s],[%s,%s],[%s,%s],[%s,%s]]]}}`,
			i, j, j, i*side+j, f(x), f(y), f(x), f(y+s), f(x+s), f(y+s), f(x+s), f(y), f(x), f(y))
	}
	// 10 m cells of 8 m squares from (500,000 E, 5,000,000 N).
	if err := write(seq, "", "\n", "\n", func(w *bufio.Writer, i, j int) {
		square(w, i, j, 500_000+10*float64(i), 5_000_000+10*float64(j), 8, 2)
	}); err != nil {
		return src, err
	}
	cmd := exec.CommandContext(ctx, "ogr2ogr", "-f", "GPKG", src.gpkg, seq, "-nln", "parcels", "-a_srs", "EPSG:32633", "-nlt", "POLYGON")
	if b, err := cmd.CombinedOutput(); err != nil {
		return src, fmt.Errorf("error writing the GeoPackage: %w: %s", err, oneLine(string(b), 300))
	}
	if err := os.Remove(seq); err != nil {
		return src, fmt.Errorf("error removing %s: %w", seq, err)
	}
	// Counter-clockwise outer rings (RFC 7946), 0.0001° cells of 0.00008° squares.
	err := write(src.geojson, `{"type":"FeatureCollection","features":[`+"\n", ",\n", "\n]}\n", func(w *bufio.Writer, i, j int) {
		x, y, s := 10+0.0001*float64(i), 45+0.0001*float64(j), 0.00008
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', 7, 64) }
		fmt.Fprintf(w, `{"type":"Feature","properties":{"code":"p%d_%d","row":%d,"name":"parcel %d"},"geometry":{"type":"Polygon","coordinates":[[[%s,%s],[%s,%s],[%s,%s],[%s,%s],[%s,%s]]]}}`,
			i, j, j, i*side+j, f(x), f(y), f(x+s), f(y), f(x+s), f(y+s), f(x), f(y+s), f(x), f(y))
	})
	return src, err
}

// writeIngest prints an ingest result.
func writeIngest(w io.Writer, in *IngestResult) {
	fmt.Fprintf(w, "  ingestion        %d polygons per file, median of %d rounds (alternating who goes first)\n", in.Features, in.Rounds)
	for _, p := range in.Paths {
		fmt.Fprintf(w, "  %s\n", p.Name)
		for k := range p.WF {
			fmt.Fprintf(w, "    round %d: wf %8.0f/s (%.2fs; cpu go %.2f gdal %.2f pg %.2f; peak RSS %.0f MiB)", k+1,
				p.WF[k].Rate, p.WF[k].Seconds, p.WF[k].GoCPU, p.WF[k].GDALCPU, p.WF[k].PGCPU, p.WF[k].PeakRSSMB)
			if k < len(p.Ogr2ogr) {
				o := p.Ogr2ogr[k]
				fmt.Fprintf(w, "  ogr2ogr %8.0f/s (%.2fs; cpu gdal %.2f pg %.2f)", o.Rate, o.Seconds, o.GDALCPU, o.PGCPU)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "    median: wf %.0f/s, ogr2ogr %.0f/s, ratio wf/ogr2ogr %.2f\n", p.WFRate, p.OgrRate, p.Ratio)
	}
}
