// Package gdaltest makes tiny vector and raster files with GDAL itself
// (ogr2ogr, gdal_create), for tests of what wf reads through GDAL: nothing
// binary is committed, and every file holds coordinates whose WGS84 values
// are known exactly.
package gdaltest

import (
	"archive/zip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Known points: their projected coordinates and their WGS84 longitude and
// latitude, exact to the formulas (no table look-up).
const (
	// MercatorX and MercatorY are lon 10°, lat 45° in EPSG:3857 (spherical
	// Mercator, R = 6378137 m): x = R·λ, y = R·ln(tan(π/4 + φ/2)).
	MercatorX = 1113194.9079327357
	MercatorY = 5621521.486192066
	// UTMX and UTMY are lon 9°, lat 0° in EPSG:32632 (UTM zone 32N): the
	// zone's central meridian on the equator is the false easting.
	UTMX = 500000.0
	UTMY = 0.0
)

// Require skips nothing: GDAL is a requirement of the catalog's tests, as
// PostgreSQL is of all of them (make postgres installs gdal-bin).
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		t.Fatalf("GDAL's ogr2ogr is not installed: run `make postgres` (it installs gdal-bin)")
	}
}

// Ogr2ogr runs ogr2ogr with args in dir and fails the test on an error.
func Ogr2ogr(t testing.TB, dir string, args ...string) {
	t.Helper()
	Require(t)
	cmd := exec.Command("ogr2ogr", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ogr2ogr %v: %v: %s", args, err, out)
	}
}

// writeGeoJSON writes a FeatureCollection (coordinates in whatever CRS
// the caller then assigns with -a_srs).
func writeGeoJSON(t testing.TB, path, features string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(`{"type":"FeatureCollection","features":[`+features+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// GeoPackage3857 writes parcels.gpkg in dir: layer "parcels" in EPSG:3857
// with a point "p1" at (MercatorX, MercatorY) and a square "sq" of
// 1000 m sides with its south-west corner there; with extraLayer, a second
// layer "other". It returns the file's path.
func GeoPackage3857(t testing.TB, dir string, extraLayer bool) string {
	t.Helper()
	src := filepath.Join(dir, "parcels-src.geojson")
	writeGeoJSON(t, src, `
{"type":"Feature","properties":{"code":"p1","name":"corner","n":1},"geometry":{"type":"Point","coordinates":[1113194.9079327357,5621521.486192066]}},
{"type":"Feature","properties":{"code":"sq","name":"square","n":2},"geometry":{"type":"Polygon","coordinates":[[
 [1113194.9079327357,5621521.486192066],[1114194.9079327357,5621521.486192066],
 [1114194.9079327357,5622521.486192066],[1113194.9079327357,5622521.486192066],
 [1113194.9079327357,5621521.486192066]]]}}`)
	out := filepath.Join(dir, "parcels.gpkg")
	Ogr2ogr(t, dir, "-f", "GPKG", out, src, "-a_srs", "EPSG:3857", "-nln", "parcels")
	if extraLayer {
		Ogr2ogr(t, dir, "-f", "GPKG", "-update", out, src, "-a_srs", "EPSG:3857", "-nln", "other")
	}
	return out
}

// ZippedShapefileUTM writes roads.zip in dir: a Shapefile (.shp, .shx,
// .dbf, .prj) in EPSG:32632 with a line "r1" from (UTMX, UTMY) 1000 m
// north, and a point "r2" at (UTMX, UTMY). It returns the zip's path.
func ZippedShapefileUTM(t testing.TB, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "roads-src.geojson")
	writeGeoJSON(t, src, `
{"type":"Feature","properties":{"code":"r1","lanes":2},"geometry":{"type":"LineString","coordinates":[[500000,0],[500000,1000]]}},
{"type":"Feature","properties":{"code":"r2","lanes":1},"geometry":{"type":"LineString","coordinates":[[500000,0],[501000,0]]}}`)
	shpDir := filepath.Join(dir, "roads-shp")
	if err := os.MkdirAll(shpDir, 0o755); err != nil {
		t.Fatal(err)
	}
	Ogr2ogr(t, dir, "-f", "ESRI Shapefile", filepath.Join(shpDir, "roads.shp"), src, "-a_srs", "EPSG:32632", "-nln", "roads")
	out := filepath.Join(dir, "roads.zip")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	entries, err := os.ReadDir(shpDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		w, err := zw.Create(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		r, err := os.Open(filepath.Join(shpDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(w, r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// GeoTIFFUTM writes dem.tif in dir: a 4 × 3 pixel GeoTIFF in EPSG:32632
// of 1000 m pixels whose upper-left corner is (UTMX, UTMY+1000) — so its
// west edge is the zone's central meridian, lon 9° — with two Int16 bands
// of no-data -9999. It returns the file's path.
func GeoTIFFUTM(t testing.TB, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("gdal_create"); err != nil {
		t.Fatalf("GDAL's gdal_create is not installed: run `make postgres` (it installs gdal-bin)")
	}
	out := filepath.Join(dir, "dem.tif")
	cmd := exec.Command("gdal_create", "-of", "GTiff", "-outsize", "4", "3", "-bands", "2", "-ot", "Int16",
		"-burn", "7", "-a_nodata", "-9999", "-a_srs", "EPSG:32632", "-a_ullr", "500000", "1000", "504000", "-2000", out)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gdal_create: %v: %s", err, b)
	}
	return out
}
