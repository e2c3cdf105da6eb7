package tiles_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/gdaltest"
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

	b.Run("wf_ingestion", func(b *testing.B) {
		var took time.Duration
		for i := 0; b.Loop(); i++ {
			coll := fmt.Sprintf("wf%d", i)
			_, err := st.CreateCollection(ctx, store.NewCollection{CatalogID: "bench", ID: coll})
			require.NoError(b, err)
			started := time.Now()
			out, err := h.Handle(ctx, catalogtest.NewTask(b, "s_bench", "ingestion", map[string]any{"catalog_id": "bench", "collection_id": coll,
				"source": gpkg, "format": "gdal", "id_attribute": "code"}), reporters.Discard{})
			took += time.Since(started)
			require.NoError(b, err, "%s", out)
		}
		b.ReportMetric(float64(n*b.N)/took.Seconds(), "features/s")
	})

	b.Run("ogr2ogr_copy", func(b *testing.B) {
		cc := pool.Config().ConnConfig
		conn := fmt.Sprintf("PG:host=%s port=%d dbname=%s user=%s password=%s", cc.Host, cc.Port, cc.Database, cc.User, cc.Password)
		var took time.Duration
		for i := 0; b.Loop(); i++ {
			cmd := exec.Command("ogr2ogr", "-f", "PostgreSQL", conn, gpkg, "parcels", "-nln", fmt.Sprintf("s_bench.ogr%d", i),
				"-lco", "GEOMETRY_NAME=geom", "-lco", "SPATIAL_INDEX=GIST", "-t_srs", "EPSG:4326", "--config", "PG_USE_COPY", "YES")
			started := time.Now()
			out, err := cmd.CombinedOutput()
			took += time.Since(started)
			require.NoError(b, err, "%s", out)
		}
		b.ReportMetric(float64(n*b.N)/took.Seconds(), "features/s")
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
