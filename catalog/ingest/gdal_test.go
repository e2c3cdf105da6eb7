package ingest_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/ingest"
	"github.com/wfhq/wf/internal/gdaltest"
	"github.com/wfhq/wf/wftype"
)

// coords returns a GeoJSON geometry's coordinates, decoded.
func coords(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var g struct {
		Coordinates any `json:"coordinates"`
	}
	require.NoError(t, json.Unmarshal(raw, &g))
	return g.Coordinates
}

// TestGDALGeoPackageProjected: a GeoPackage in EPSG:3857 is reprojected to
// WGS84 by GDAL and lands at the known coordinates; its attributes keep
// their types; a second ingestion of the same file changes nothing.
func TestGDALGeoPackageProjected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gpkg := gdaltest.GeoPackage3857(t, t.TempDir(), false)
	out, rep := b.ingestFile(t, map[string]any{"source": gpkg, "format": "gdal", "id_attribute": "code"})
	require.Equal(t, ingest.Counts{Read: 2, Created: 2}, out.Features)
	envs := rep.byExternalID()
	p := coords(t, envs["p1"].Record.Geometry).([]any)
	require.InDelta(t, 10.0, p[0], 1e-9)
	require.InDelta(t, 45.0, p[1], 1e-9)
	require.Equal(t, map[string]any{"code": "p1", "name": "corner", "n": json.Number("1")}, envs["p1"].Record.Properties)
	// A 1 km Mercator square at 45° is about (1000·cos 45°)² m² on the ground.
	area := number(t, envs["sq"].Record.Stats["area"])
	require.InDelta(t, 500_000, area, 5_000, "area %.0f m²", area)

	var wkt string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT ST_AsText(ST_SnapToGrid(geom, 1e-9)) FROM s_cat.regions WHERE external_id = 'p1'`).Scan(&wkt))
	require.Equal(t, "POINT(10 45)", wkt)

	out, _ = b.ingestFile(t, map[string]any{"source": gpkg, "format": "gdal", "id_attribute": "code"})
	require.Equal(t, ingest.Counts{Read: 2, Unchanged: 2}, out.Features)
}

// TestGDALZippedShapefile: a zipped Shapefile in UTM zone 32N, read through
// /vsizip/, lands at the known coordinates.
func TestGDALZippedShapefile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	zipped := gdaltest.ZippedShapefileUTM(t, t.TempDir())
	out, rep := b.ingestFile(t, map[string]any{"source": zipped, "format": "gdal", "id_attribute": "code"})
	require.Equal(t, ingest.Counts{Read: 2, Created: 2}, out.Features)
	line := coords(t, rep.byExternalID()["r2"].Record.Geometry).([]any)
	start := line[0].([]any)
	require.InDelta(t, 9.0, start[0], 1e-9)
	require.InDelta(t, 0.0, start[1], 1e-9)
	end := line[1].([]any)
	// 1 km east of the central meridian on the equator: Δλ = x / (k0·a)
	// radians to first order, with k0 = 0.9996 and a = 6378137 m.
	require.InDelta(t, 9+1000/(0.9996*6378137)*180/math.Pi, end[0], 1e-8)
}

// TestGDALLayersAndCRS: a source of several layers needs "layer" (the
// error names them); a Shapefile without .prj needs "source_crs" (the
// error says so) and is placed by it.
func TestGDALLayersAndCRS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	gpkg := gdaltest.GeoPackage3857(t, dir, true)
	_, err := b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": gpkg, "format": "gdal", "id_attribute": "code"}), &capture{})
	requirePermanent(t, err)
	require.ErrorContains(t, err, `it has 2 layers (parcels, other): name one in "layer"`)
	out, _ := b.ingestFile(t, map[string]any{"source": gpkg, "format": "gdal", "id_attribute": "code", "layer": "other"})
	require.EqualValues(t, 2, out.Features.Created)
	_, err = b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": gpkg, "format": "gdal", "id_attribute": "code", "layer": "nope"}), &capture{})
	requirePermanent(t, err)
	require.ErrorContains(t, err, "it has no layer of that name")

	// A local .shp is read with its sidecars; without its .prj, GDAL cannot
	// know where it is.
	zipped := gdaltest.ZippedShapefileUTM(t, dir)
	shp := filepath.Join(dir, "roads-shp", "roads.shp")
	require.FileExists(t, zipped)
	require.NoError(t, os.Remove(filepath.Join(dir, "roads-shp", "roads.prj")))
	_, err = b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": shp, "format": "gdal", "id_attribute": "code"}), &capture{})
	requirePermanent(t, err)
	require.ErrorContains(t, err, `it has no coordinate reference system: name it in "source_crs"`)
	require.NotContains(t, err.Error(), "wf-scratch", "messages name the source, not wf's copy")
	_, rep := b.ingestFile(t, map[string]any{"source": shp, "format": "gdal", "id_attribute": "code", "source_crs": "EPSG:32632"})
	start := coords(t, rep.byExternalID()["r1"].Record.Geometry).([]any)[0].([]any)
	require.InDelta(t, 9.0, start[0], 1e-9)
}

// TestGDALBadInputs: what GDAL cannot read, and inputs that would reach
// files through GDAL, fail permanently with words a user understands.
func TestGDALBadInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	junk := writeFile(t, "junk.dat", "this is not a vector file\x00\x01")
	_, err := b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": junk, "format": "gdal", "id_attribute": "id"}), &capture{})
	requirePermanent(t, err)
	require.ErrorContains(t, err, "GDAL cannot read it")

	for crs, want := range map[string]string{
		"/etc/passwd":              `"source_crs" is "/etc/passwd", want an authority and a code`,
		"http://example.com/x.prj": `want an authority and a code`,
	} {
		_, err := b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": junk, "format": "gdal", "id_attribute": "id", "source_crs": crs}), &capture{})
		requirePermanent(t, err)
		require.ErrorContains(t, err, want)
	}
	_, err = b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": junk, "format": "gdal", "id_attribute": "id", "layer": "-sql"}), &capture{})
	require.ErrorContains(t, err, `"layer" is "-sql"`)
	_, err = b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": junk, "format": "ndjson", "id_attribute": "id", "layer": "x"}), &capture{})
	require.ErrorContains(t, err, `"layer" and "source_crs" apply to format gdal only`)

	// A VRT pointing at another file is not followed.
	vrt := writeFile(t, "escape.vrt", `<OGRVRTDataSource><OGRVRTLayer name="x"><SrcDataSource>/etc/passwd</SrcDataSource></OGRVRTLayer></OGRVRTDataSource>`)
	_, err = b.handler.Handle(b.ctx, newTask(t, map[string]any{"source": vrt, "format": "gdal", "id_attribute": "id"}), &capture{})
	requirePermanent(t, err)
	require.ErrorContains(t, err, "GDAL cannot read it")
}

// TestGDALCancelled: a cancelled task stops GDAL and is not failed for good.
func TestGDALCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gpkg := gdaltest.GeoPackage3857(t, t.TempDir(), false)
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	_, err := b.handler.Handle(ctx, newTask(t, map[string]any{"source": gpkg, "format": "gdal", "id_attribute": "code"}), &capture{})
	require.Error(t, err)
	require.False(t, wftype.IsPermanent(err), "a cancellation is not the source's fault: %v", err)
}
