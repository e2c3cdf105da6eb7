package gdal_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/gdal"
	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/gdaltest"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// bundle is one test's database, registry, handler and files folder.
type bundle struct {
	ctx     context.Context
	pool    *pgxpool.Pool
	store   *store.Store
	reg     *registry.Registry
	handler *gdal.Handler
	root    string // files.local_roots
	files   string // the folder of tenant s_cat in root
}

// setup gives a test catalogs "cat" (tenant s_cat) and "other" (s_other),
// and a handler whose local files are those of a folder of its own (root,
// s_cat's files in files).
func setup(t *testing.T) *bundle {
	t.Helper()
	pool, st := catalogtest.NewStore(t, []string{"cat", "other"})
	ctx := context.Background()
	root := t.TempDir()
	files := filepath.Join(root, "s_cat") // the tenant's folder under the root
	require.NoError(t, os.MkdirAll(files, 0o755))
	h, err := gdal.New(gdal.Config{Store: st, Objects: objio.New(objio.Config{LocalRoots: []string{root}}), ScratchDir: t.TempDir()})
	require.NoError(t, err)
	return &bundle{ctx: ctx, pool: pool, store: st, reg: registry.New(st, events.NewEmitter(st)), handler: h, root: root, files: files}
}

// describeAsset registers uri as asset id of catalog cat and describes it
// with a gdal task of tenant s_cat.
func (b *bundle) describeAsset(t *testing.T, id, uri, kind string) gdal.Info {
	t.Helper()
	_, err := b.reg.AddAsset(b.ctx, store.NewAsset{CatalogID: "cat", ID: id, URI: uri, Kind: kind})
	require.NoError(t, err)
	out, err := b.run("s_cat", map[string]any{"catalog_id": "cat", "asset_id": id})
	require.NoError(t, err)
	return out.Info
}

// run runs the handler as a task of tenant schema.
func (b *bundle) run(schema string, inputs map[string]any) (gdal.Outputs, error) {
	raw, err := json.Marshal(inputs)
	if err != nil {
		return gdal.Outputs{}, err
	}
	out, err := b.handler.Handle(b.ctx, &wftype.Task{SchemaName: schema, TaskType: "gdal", Inputs: raw}, reporters.Discard{})
	if err != nil {
		return gdal.Outputs{}, err
	}
	var o gdal.Outputs
	return o, json.Unmarshal(out, &o)
}

// mercatorLon and mercatorLat invert spherical Mercator (EPSG:3857).
func mercatorLon(x float64) float64 { return x / 6378137 * 180 / math.Pi }
func mercatorLat(y float64) float64 { return math.Atan(math.Sinh(y/6378137)) * 180 / math.Pi }

// utmDegrees returns the metres of UTM per degree of longitude and of
// latitude near the equator on the central meridian: k0·N and k0·M, with
// N = a and M = a(1−e²) there (WGS84).
func utmDegrees() (kx, ky float64) {
	const a, e2, k0 = 6378137.0, 0.00669437999014, 0.9996
	return k0 * a * math.Pi / 180, k0 * a * (1 - e2) * math.Pi / 180
}

// requireBox compares [w, s, e, n] boxes within tol degrees.
func requireBox(t *testing.T, want, got []float64, tol float64) {
	t.Helper()
	require.Len(t, got, 4, "extent %v", got)
	for i := range 4 {
		require.InDelta(t, want[i], got[i], tol, "extent %v, want %v", got, want)
	}
}

// TestRasterAsset: a GeoTIFF asset in UTM 32N is described from gdalinfo:
// driver, size, CRS with its EPSG code, extent in WGS84 and bands; the
// result lands in the asset's metadata with an asset.updated event.
func TestRasterAsset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tif := gdaltest.GeoTIFFUTM(t, b.files)
	info := b.describeAsset(t, "DEM_1", tif, store.AssetRaster)
	require.Equal(t, gdal.KindRaster, info.Kind)
	require.Equal(t, "GTiff", info.Driver)
	require.Equal(t, []int{4, 3}, info.Size)
	st, err := os.Stat(tif)
	require.NoError(t, err)
	require.Equal(t, st.Size(), info.FileSize)
	require.NotNil(t, info.CRS)
	require.Equal(t, 32632, info.CRS.EPSG)
	require.Contains(t, info.CRS.WKT, "UTM zone 32N")
	// West edge on the central meridian (9°); 4 km east, 1 km north and 2 km
	// south of the equator (see utmDegrees).
	kx, ky := utmDegrees()
	requireBox(t, []float64{9, -2000 / ky, 9 + 4000/kx, 1000 / ky}, info.ExtentWGS84, 1e-6)
	require.Len(t, info.Bands, 2)
	require.Equal(t, gdal.Band{Band: 1, Type: "Int16", ColorInterpretation: "Gray", NoData: -9999.0}, info.Bands[0])
	require.Empty(t, info.Layers)

	a, err := b.store.GetAsset(b.ctx, "cat", "DEM_1")
	require.NoError(t, err)
	var meta map[string]gdal.Info
	require.NoError(t, json.Unmarshal(a.Metadata, &meta))
	require.Equal(t, info, meta[gdal.MetadataKey])
	var updated int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.events WHERE event_type = 'asset.updated' AND schema_name = 's_cat'`).Scan(&updated))
	require.Equal(t, 1, updated)
}

// TestVectorSources: a GeoPackage in EPSG:3857 with two layers, as an
// asset, and a zipped Shapefile in UTM, by URI (no asset, no kind: GDAL
// tries a raster first): layers with geometry type, count, fields, CRS and
// extent in WGS84 at the known coordinates.
func TestVectorSources(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gpkg := gdaltest.GeoPackage3857(t, b.files, true)
	info := b.describeAsset(t, "PARCELS", gpkg, store.AssetVector)
	require.Equal(t, gdal.KindVector, info.Kind)
	require.Equal(t, "GPKG", info.Driver)
	require.Len(t, info.Layers, 2)
	want := []float64{10, 45, mercatorLon(gdaltest.MercatorX + 1000), mercatorLat(gdaltest.MercatorY + 1000)}
	for i, name := range []string{"parcels", "other"} {
		l := info.Layers[i]
		require.Equal(t, name, l.Name)
		require.EqualValues(t, 2, l.FeatureCount)
		require.Equal(t, 3857, l.CRS.EPSG)
		requireBox(t, want, l.ExtentWGS84, 1e-6)
		require.Equal(t, []gdal.Field{{Name: "code", Type: "String"}, {Name: "name", Type: "String"}, {Name: "n", Type: "Integer"}}, l.Fields)
	}
	require.Equal(t, 3857, info.CRS.EPSG)
	requireBox(t, want, info.ExtentWGS84, 1e-6)

	zipped := gdaltest.ZippedShapefileUTM(t, b.files)
	out, err := b.run("s_cat", map[string]any{"catalog_id": "cat", "uri": zipped})
	require.NoError(t, err)
	require.Empty(t, out.AssetID)
	info = out.Info
	require.Equal(t, "ESRI Shapefile", info.Driver)
	require.Len(t, info.Layers, 1)
	l := info.Layers[0]
	require.Equal(t, "roads", l.Name)
	require.Equal(t, "Line String", l.GeometryType)
	require.Equal(t, 32632, l.CRS.EPSG)
	require.Equal(t, []gdal.Field{{Name: "code", Type: "String", Width: 80}, {Name: "lanes", Type: "Integer", Width: 9}}, l.Fields)
	kx, ky := utmDegrees()
	requireBox(t, []float64{9, 0, 9 + 1000/kx, 1000 / ky}, l.ExtentWGS84, 1e-6)
}

// TestRefused: what the task cannot or must not describe fails for good,
// in words, and leaves the asset as it was.
func TestRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	junk := filepath.Join(b.files, "junk.tif")
	require.NoError(t, os.WriteFile(junk, []byte("not an image\x00\x01"), 0o644))
	_, err := b.reg.AddAsset(b.ctx, store.NewAsset{CatalogID: "cat", ID: "JUNK", URI: junk})
	require.NoError(t, err)
	_, err = b.reg.AddAsset(b.ctx, store.NewAsset{CatalogID: "other", ID: "THEIRS", URI: gdaltest.GeoTIFFUTM(t, b.files), Kind: store.AssetRaster})
	require.NoError(t, err)
	_, err = b.reg.AddAsset(b.ctx, store.NewAsset{CatalogID: "cat", ID: "GONE", URI: junk})
	require.NoError(t, err)
	_, err = b.reg.RemoveAsset(b.ctx, "cat", "GONE")
	require.NoError(t, err)

	for _, c := range []struct {
		schema string
		inputs map[string]any
		want   string
	}{
		{"s_cat", map[string]any{"catalog_id": "cat", "asset_id": "JUNK"}, "it is neither a raster nor a vector source GDAL reads"},
		{"s_cat", map[string]any{"catalog_id": "other", "asset_id": "THEIRS"}, `the task belongs to tenant "s_cat", catalog "other" to "s_other"`},
		{"s_cat", map[string]any{"catalog_id": "cat", "asset_id": "THEIRS"}, `asset "THEIRS" of catalog "cat" with GDAL: it does not exist`},
		{"s_cat", map[string]any{"catalog_id": "cat", "asset_id": "GONE"}, "it is deleted"},
		{"s_cat", map[string]any{"catalog_id": "nope", "asset_id": "X"}, `catalog "nope"`},
		{"s_cat", map[string]any{"catalog_id": "cat", "uri": "/etc/passwd"}, "/etc/passwd is outside the files of tenant s_cat"},
		{"s_cat", map[string]any{"catalog_id": "cat", "uri": filepath.Join(b.root, "s_other", "x.tif")}, "is outside the files of tenant s_cat"},
		{"s_cat", map[string]any{"catalog_id": "cat", "uri": "%2e%2e/s_other/x.tif"}, "has a '..' segment"},
		{"s_cat", map[string]any{"catalog_id": "cat", "uri": filepath.Join(b.files, "missing.tif")}, "missing.tif"},
		{"s_cat", map[string]any{"catalog_id": "cat"}, `give "asset_id" (an asset of the catalog) or "uri" (a file), one of them`},
		{"s_cat", map[string]any{"catalog_id": "cat", "asset_id": "A", "uri": junk}, `one of them`},
		{"s_cat", map[string]any{"catalog_id": "cat", "uri": junk, "extra": 1}, `unknown field "extra"`},
	} {
		_, err := b.run(c.schema, c.inputs)
		require.Error(t, err, "%v", c.inputs)
		require.True(t, wftype.IsPermanent(err), "%v: %v", c.inputs, err)
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), "wf-scratch", "messages name the source, not wf's copy")
	}
	a, err := b.store.GetAsset(b.ctx, "cat", "JUNK")
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(a.Metadata))
}

// TestLayerNamedAfterTheFile: GDAL names the layer of a one-layer file
// after the file, and the task describes the user's file, not wf's scratch
// copy of it: a GeoJSON called sites.geojson has the layer sites.
func TestLayerNamedAfterTheFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sites := filepath.Join(b.files, "sites.geojson")
	require.NoError(t, os.WriteFile(sites, []byte(`{"type": "FeatureCollection", "features": [
		{"type": "Feature", "properties": {"code": "rome"}, "geometry": {"type": "Point", "coordinates": [12.5, 41.9]}}]}`), 0o644))
	out, err := b.run("s_cat", map[string]any{"catalog_id": "cat", "uri": sites})
	require.NoError(t, err)
	require.Len(t, out.Info.Layers, 1)
	require.Equal(t, "sites", out.Info.Layers[0].Name)
	require.EqualValues(t, 1, out.Info.Layers[0].FeatureCount)
}
