package tiles_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// The features of the tests: three points and a square, each farther
// than the tile buffer from the edges of its tiles at zooms 0 to 3.
const places = `{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"code":"a","name":"ten"},"geometry":{"type":"Point","coordinates":[10,10]}},
{"type":"Feature","properties":{"code":"b","name":"plains"},"geometry":{"type":"Point","coordinates":[-100,40]}},
{"type":"Feature","properties":{"code":"d","name":"far"},"geometry":{"type":"Point","coordinates":[179,-60]}},
{"type":"Feature","properties":{"code":"c","name":"square"},"geometry":{"type":"Polygon","coordinates":[[[20,-30],[30,-30],[30,-20],[20,-20],[20,-30]]]}}]}`

// bundle is one test's database, collection and ingestion.
type bundle struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	store *store.Store
	dir   string
}

// setup gives a test catalog "cat" (tenant s_cat) with collection
// "places" ingested from places, and catalog "other" (s_other).
func setup(t *testing.T) *bundle {
	t.Helper()
	pool, st := catalogtest.NewStore(t, []string{"cat", "other"}, "places")
	b := &bundle{ctx: context.Background(), pool: pool, store: st, dir: t.TempDir()}
	b.load(t, places)
	return b
}

// load ingests a FeatureCollection into cat/places.
func (b *bundle) load(t *testing.T, fc string) {
	t.Helper()
	src := filepath.Join(b.dir, uuid.NewString()+".geojson")
	require.NoError(t, os.WriteFile(src, []byte(fc), 0o644))
	catalogtest.Ingest(t, b.store, map[string]any{"catalog_id": "cat", "collection_id": "places",
		"source": src, "format": "geojson", "id_attribute": "code"})
}

// fileCache returns a tile service caching in a folder of its own
// (cacheDir), and its tiles_preseed handler.
func (b *bundle) fileCache(t *testing.T) (svc *tiles.Service, h *tiles.Handler, cacheDir string) {
	t.Helper()
	cacheDir = t.TempDir()
	svc, err := tiles.New(tiles.Config{Store: b.store, CacheURL: "file://" + cacheDir})
	require.NoError(t, err)
	return svc, tiles.NewHandler(svc), cacheDir
}

// preseed runs tiles_preseed on cat/places.
func preseed(t *testing.T, b *bundle, h *tiles.Handler, inputs map[string]any) tiles.PreseedOutputs {
	t.Helper()
	inputs["catalog_id"], inputs["collection_id"] = "cat", "places"
	return catalogtest.Handle[tiles.PreseedOutputs](t, h.Handle, catalogtest.NewTask(t, "s_cat", tiles.HandlerName, inputs), reporters.Discard{})
}

// preseedWith runs tiles_preseed of zooms 0 to maxZoom on a collection of
// catalog (tenant s_<catalog>).
func preseedWith(t testing.TB, h *tiles.Handler, catalog, collection string, maxZoom int) tiles.PreseedOutputs {
	t.Helper()
	return catalogtest.Handle[tiles.PreseedOutputs](t, h.Handle, catalogtest.NewTask(t, "s_"+catalog, tiles.HandlerName,
		map[string]any{"catalog_id": catalog, "collection_id": collection, "max_zoom": maxZoom}), reporters.Discard{})
}

// where returns the tile of (lon, lat) at zoom z and its position in it,
// in tile units of 4096 (Web Mercator, XYZ rows from the north).
func where(lon, lat float64, z int) (tiles.Coord, orb.Point) {
	n := math.Exp2(float64(z))
	fx := (lon + 180) / 360 * n
	phi := lat * math.Pi / 180
	fy := (1 - math.Log(math.Tan(phi)+1/math.Cos(phi))/math.Pi) / 2 * n
	c := tiles.Coord{Z: z, X: int(fx), Y: int(fy)}
	return c, orb.Point{(fx - float64(c.X)) * 4096, (fy - float64(c.Y)) * 4096}
}

// decode reads a tile's one layer and indexes its features by code.
func decode(t *testing.T, tile []byte) map[string]*mvt.Layer {
	t.Helper()
	layers, err := mvt.Unmarshal(tile)
	require.NoError(t, err)
	out := map[string]*mvt.Layer{}
	for _, l := range layers {
		out[l.Name] = l
	}
	return out
}

// codes returns the external ids of a layer's features.
func codes(l *mvt.Layer) map[string]orb.Geometry {
	out := map[string]orb.Geometry{}
	for _, f := range l.Features {
		out[f.Properties["external_id"].(string)] = f.Geometry
	}
	return out
}

// TestPreseedFileCache: z0–z3 over the collection's extent are 34 tiles
// (1 + 2·2 + 4·2 + 7·3); the non-empty ones are written as {z}/{x}/{y}.mvt, and
// every point is in the tile that holds it at its position, with its
// properties; the square is in the tile of its centre. A second run (a
// retry) writes nothing; a change of the features makes a new version,
// written again.
func TestPreseedFileCache(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, h, cacheDir := b.fileCache(t)
	out := preseed(t, b, h, map[string]any{"max_zoom": 3})
	require.Equal(t, []float64{-100, -60, 179, 40}, out.BBox)
	require.NotEmpty(t, out.Version)
	c := out.Tiles
	require.EqualValues(t, 34, c.Total)
	require.Equal(t, c.Total, c.Done)
	require.Equal(t, c.Total, c.Written+c.Empty)
	require.Zero(t, c.Cached)
	require.True(t, strings.HasPrefix(out.Cache, "file://"+cacheDir+"/s_cat/cat/places/"), out.Cache)
	folder := strings.TrimPrefix(out.Cache, "file://")

	var files []string
	require.NoError(t, filepath.WalkDir(folder, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	require.Len(t, files, int(c.Written))

	read := func(coord tiles.Coord) map[string]orb.Geometry {
		tile, err := os.ReadFile(filepath.Join(folder, coord.String()+".mvt"))
		require.NoError(t, err, "tile %s", coord)
		l := decode(t, tile)["places"]
		require.NotNil(t, l, "tile %s has the layer", coord)
		return codes(l)
	}
	for z := 0; z <= 3; z++ {
		for _, p := range []struct {
			code     string
			lon, lat float64
		}{{"a", 10, 10}, {"b", -100, 40}, {"d", 179, -60}} {
			coord, pos := where(p.lon, p.lat, z)
			got := read(coord)[p.code]
			require.NotNil(t, got, "%s in tile %s", p.code, coord)
			pt := got.(orb.Point)
			require.InDelta(t, pos[0], pt[0], 1, "%s x in %s", p.code, coord)
			require.InDelta(t, pos[1], pt[1], 1, "%s y in %s", p.code, coord)
		}
		coord, centre := where(25, -25, z)
		sq, ok := read(coord)["c"].(orb.Polygon)
		require.True(t, ok, "the square in tile %s", coord)
		require.True(t, sq.Bound().Contains(centre), "the square's bound %v holds its centre %v", sq.Bound(), centre)
	}
	// Properties travel with the features.
	coord, _ := where(10, 10, 0)
	tile, err := os.ReadFile(filepath.Join(folder, coord.String()+".mvt"))
	require.NoError(t, err)
	for _, f := range decode(t, tile)["places"].Features {
		if f.Properties["external_id"] == "a" {
			require.Equal(t, "ten", f.Properties["name"])
		}
	}

	again := preseed(t, b, h, map[string]any{"max_zoom": 3})
	require.Equal(t, out.Version, again.Version)
	require.Equal(t, tiles.TileCounts{Total: 34, Done: 34, Cached: c.Written, Empty: c.Empty}, again.Tiles, "a retry writes nothing again")

	b.load(t, strings.Replace(places, `"name":"ten"`, `"name":"eleven"`, 1))
	next := preseed(t, b, h, map[string]any{"max_zoom": 1})
	require.NotEqual(t, out.Version, next.Version)
	require.Zero(t, next.Tiles.Cached)
	require.EqualValues(t, 5, next.Tiles.Total)
	require.Equal(t, next.Tiles.Total, next.Tiles.Written+next.Tiles.Empty)
}

// TestTileService: the endpoint's path renders a missing tile and caches
// it (in a fake Cloud Storage bucket), serves it from there afterwards,
// answers an empty tile without caching it, and refuses tiles that do
// not exist.
func TestTileService(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := gcptest.NewFakeGCS(t, "tiles")
	svc, err := tiles.New(tiles.Config{Store: b.store, CacheURL: "gs://tiles/wf",
		Objects: objio.New(objio.Config{GCSEndpoint: srv.URL() + "/storage/v1/"})})
	require.NoError(t, err)
	ft, err := store.NewFeatureTable("s_cat", "places")
	require.NoError(t, err)
	col := tiles.Collection{CatalogID: "cat", Table: ft}

	coord, _ := where(10, 10, 2)
	tile, err := svc.Tile(b.ctx, col, coord)
	require.NoError(t, err)
	require.Contains(t, codes(decode(t, tile)["places"]), "a")
	version, err := b.store.FeaturesVersion(b.ctx, ft)
	require.NoError(t, err)
	obj, err := srv.GetObject("tiles", "wf/s_cat/cat/places/"+version+"/"+coord.String()+".mvt")
	require.NoError(t, err, "the rendered tile is cached")
	require.Equal(t, tile, obj.Content)

	// Served from the cache: what the bucket holds is what comes back.
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "tiles", Name: obj.Name}, Content: []byte("cached")})
	again, err := svc.Tile(b.ctx, col, coord)
	require.NoError(t, err)
	require.Equal(t, []byte("cached"), again)

	empty, err := svc.Tile(b.ctx, col, tiles.Coord{Z: 3, X: 0, Y: 0})
	require.NoError(t, err)
	require.Empty(t, empty)
	objs, err := srv.ListObjectsWithOptionsPaginated("tiles", fakestorage.ListOptions{Prefix: "wf/"})
	require.NoError(t, err)
	require.Len(t, objs.Objects, 1, "an empty tile is not cached")

	for _, bad := range []tiles.Coord{{Z: 2, X: 4, Y: 0}, {Z: -1}, {Z: 23}, {Z: 1, X: 0, Y: -1}} {
		_, err := svc.Tile(b.ctx, col, bad)
		require.ErrorContains(t, err, "no such tile", "%v", bad)
	}
}

// TestPreseedRefused: bad inputs, too many tiles and another tenant's
// catalog fail for good, writing nothing.
func TestPreseedRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, h, cacheDir := b.fileCache(t)
	for _, c := range []struct {
		schema string
		inputs map[string]any
		want   string
	}{
		{"s_cat", map[string]any{"catalog_id": "cat", "collection_id": "places"}, `"max_zoom" is required`},
		{"s_cat", map[string]any{"catalog_id": "cat", "collection_id": "places", "min_zoom": 5, "max_zoom": 3}, `want 0 ≤ min_zoom ≤ max_zoom ≤ 22`},
		{"s_cat", map[string]any{"catalog_id": "cat", "collection_id": "places", "max_zoom": 23}, `want 0 ≤ min_zoom ≤ max_zoom ≤ 22`},
		{"s_cat", map[string]any{"catalog_id": "cat", "collection_id": "places", "max_zoom": 3, "bbox": []float64{0, 10, 1, 5}}, `"bbox" is [0 10 1 5]`},
		{"s_cat", map[string]any{"catalog_id": "cat", "collection_id": "places", "max_zoom": 22}, "narrow the zoom range or the bbox"},
		{"s_cat", map[string]any{"catalog_id": "other", "collection_id": "places", "max_zoom": 1}, `the task belongs to tenant "s_cat"`},
		{"s_cat", map[string]any{"catalog_id": "cat", "collection_id": "nope", "max_zoom": 1}, `nope`},
		{"s_cat", map[string]any{"catalog_id": "cat", "collection_id": "places", "max_zoom": 1, "extra": true}, `unknown field "extra"`},
	} {
		_, err := h.Handle(b.ctx, catalogtest.NewTask(t, c.schema, tiles.HandlerName, c.inputs), reporters.Discard{})
		require.Error(t, err, "%v", c.inputs)
		require.True(t, wftype.IsPermanent(err), "%v: %v", c.inputs, err)
		require.ErrorContains(t, err, c.want)
	}
	entries, err := os.ReadDir(cacheDir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestRanges: the tiles of a bbox, one that crosses the antimeridian
// included.
func TestRanges(t *testing.T) {
	t.Parallel()
	require.Equal(t, []tiles.Range{{Z: 0}, {Z: 1, X0: 0, Y0: 0, X1: 1, Y1: 1}}, tiles.Ranges([]float64{-180, -90, 180, 90}, 0, 1))
	// 170°E to 170°W: the one tile at z0, then the two sides.
	require.Equal(t, []tiles.Range{
		{Z: 0}, {Z: 1, X0: 1, Y0: 0, X1: 1, Y1: 0}, {Z: 1, X0: 0, Y0: 0, X1: 0, Y1: 0},
		{Z: 2, X0: 3, Y0: 1, X1: 3, Y1: 1}, {Z: 2, X0: 0, Y0: 1, X1: 0, Y1: 1},
	}, tiles.Ranges([]float64{170, 10, -170, 20}, 0, 2))
}
