package tiles_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/gdaltest"
	"github.com/wfhq/wf/internal/proccpu"
	"github.com/wfhq/wf/reporters"
)

// benchGrid is the side of the benchmark's grid of squares: 450² = 202,500
// polygons in one degree square at (10°E, 45°N).
const benchGrid = 450

// writeBenchGeoPackage writes the benchmark's GeoPackage (EPSG:4326, one
// layer "parcels", a square and three attributes per feature) and returns
// its path.
func writeBenchGeoPackage(b *testing.B, dir string) string {
	b.Helper()
	seq := filepath.Join(dir, "parcels.geojsons")
	f, err := os.Create(seq)
	require.NoError(b, err)
	w := bufio.NewWriterSize(f, 1<<20)
	step := 1.0 / benchGrid
	for i := range benchGrid {
		for j := range benchGrid {
			x, y := 10+float64(i)*step, 45+float64(j)*step
			s := step * 0.8
			fmt.Fprintf(w, `{"type":"Feature","properties":{"code":"p%d_%d","row":%d,"name":"parcel %d"},"geometry":{"type":"Polygon","coordinates":[[[%s,%s],[%s,%s],[%s,%s],[%s,%s],[%s,%s]]]}}`+"\n",
				i, j, j, i*benchGrid+j, ff(x), ff(y), ff(x+s), ff(y), ff(x+s), ff(y+s), ff(x), ff(y+s), ff(x), ff(y))
		}
	}
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
	gpkg := filepath.Join(dir, "parcels.gpkg")
	gdaltest.Ogr2ogr(b, dir, "-f", "GPKG", gpkg, seq, "-nln", "parcels", "-a_srs", "EPSG:4326", "-nlt", "POLYGON")
	return gpkg
}

// wfRuns and ogrRuns number the benchmark's collections and tables, so
// that -count runs it more than once.
var wfRuns, ogrRuns atomic.Int64

func ff(v float64) string { return strconv.FormatFloat(v, 'f', 7, 64) }

// BenchmarkGeoPackage measures, on one GeoPackage of 202,500 polygons,
// wf's ingestion (format gdal: ogr2ogr to GeoJSONSeq, then wf's checks,
// stats, hashes, versions and envelopes), ogr2ogr's own load into the same
// PostGIS (-f PostgreSQL, PG_USE_COPY=YES, a GiST index, as a reference),
// and tiles_preseed of z0–z12 over the collection. Run it once:
//
//	go run ./internal/dbtest/withdb -- go test -run '^$' -bench GeoPackage -benchtime 1x -timeout 60m ./catalog/tiles/
func BenchmarkGeoPackage(b *testing.B) {
	gdaltest.Require(b)
	pool := dbtest.NewPool(b)
	st := store.New(pool)
	ctx := context.Background()
	_, err := st.CreateCatalog(ctx, store.NewCatalog{ID: "bench", SchemaName: "s_bench"})
	require.NoError(b, err)
	dir := b.TempDir()
	gpkg := writeBenchGeoPackage(b, dir)
	const n = benchGrid * benchGrid
	h, err := ingest.New(ingest.Config{Store: st, ScratchDir: dir})
	require.NoError(b, err)
	var backend int
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend))
	postmaster := proccpu.Parent(backend)

	b.Run("wf_ingestion", func(b *testing.B) {
		var took time.Duration
		c := startCPU(postmaster)
		for b.Loop() {
			coll := fmt.Sprintf("wf%d", wfRuns.Add(1)-1) // the first, wf0, is tiled below
			_, err := st.CreateCollection(ctx, store.NewCollection{CatalogID: "bench", ID: coll})
			require.NoError(b, err)
			started := time.Now()
			out, err := h.Handle(ctx, catalogtest.NewTask(b, "s_bench", "ingestion", map[string]any{"catalog_id": "bench", "collection_id": coll,
				"source": gpkg, "format": "gdal", "id_attribute": "code"}), reporters.Discard{})
			took += time.Since(started)
			require.NoError(b, err, "%s", out)
		}
		b.ReportMetric(float64(n*b.N)/took.Seconds(), "features/s")
		c.report(b)
	})

	b.Run("ogr2ogr_copy", func(b *testing.B) {
		cc := pool.Config().ConnConfig
		conn := fmt.Sprintf("PG:host=%s port=%d dbname=%s user=%s password=%s", cc.Host, cc.Port, cc.Database, cc.User, cc.Password)
		var took time.Duration
		c := startCPU(postmaster)
		for b.Loop() {
			cmd := exec.Command("ogr2ogr", "-f", "PostgreSQL", conn, gpkg, "parcels", "-nln", fmt.Sprintf("s_bench.ogr%d", ogrRuns.Add(1)),
				"-lco", "GEOMETRY_NAME=geom", "-lco", "SPATIAL_INDEX=GIST", "-t_srs", "EPSG:4326", "--config", "PG_USE_COPY", "YES")
			started := time.Now()
			out, err := cmd.CombinedOutput()
			took += time.Since(started)
			require.NoError(b, err, "%s", out)
		}
		b.ReportMetric(float64(n*b.N)/took.Seconds(), "features/s")
		c.report(b)
	})

	b.Run("tiles_z0_z12", func(b *testing.B) {
		var took time.Duration
		var count tiles.TileCounts
		for i := 0; b.Loop(); i++ {
			// A cache of its own per run: every tile is rendered.
			svc, err := tiles.New(tiles.Config{Store: st, CacheURL: "file://" + filepath.Join(b.TempDir(), strconv.Itoa(i))})
			require.NoError(b, err)
			started := time.Now()
			out := preseedWith(b, tiles.NewHandler(svc), "bench", "wf0", 12)
			took += time.Since(started)
			count = out.Tiles
		}
		b.ReportMetric(float64(count.Total*int64(b.N))/took.Seconds(), "tiles/s")
		b.ReportMetric(float64(count.Total), "tiles")
		b.ReportMetric(float64(count.Written), "written")
	})
}

// cpuSpent is where a run's CPU time goes: this process (wf), its children
// (GDAL's commands) and the PostgreSQL server (every backend and helper
// process of its postmaster). On a loaded machine wall-clock rates follow
// the load; CPU seconds per part say what the work itself costs.
type cpuSpent struct {
	postmaster        int
	self, child, serv time.Duration
}

func startCPU(postmaster int) *cpuSpent {
	return &cpuSpent{postmaster: postmaster, self: proccpu.Self().CPU(), child: proccpu.Children().CPU(), serv: proccpu.TreeCPU(postmaster)}
}

// report adds the CPU seconds spent since startCPU, per run, as metrics.
func (c *cpuSpent) report(b *testing.B) {
	self, child, serv := proccpu.Self().CPU()-c.self, proccpu.Children().CPU()-c.child, proccpu.TreeCPU(c.postmaster)-c.serv
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	b.ReportMetric(per(self), "go-cpu-s")
	b.ReportMetric(per(child), "gdal-cpu-s")
	b.ReportMetric(per(serv), "pg-cpu-s")
	b.ReportMetric(per(self+child+serv), "cpu-s")
}
