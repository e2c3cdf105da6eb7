package gdal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseOgrinfo: names that hold ": ", parentheses or the words GDAL
// uses for its own lines are read as names; a layer without CRS has none;
// the WKT is read to its closing bracket, brackets in quoted text included.
func TestParseOgrinfo(t *testing.T) {
	t.Parallel()
	out := "INFO: Open of `/tmp/x/source.gpkg'\n      using driver `GPKG' successful.\n\n" +
		"Layer name: roads: main (2024)\n" +
		"Geometry: Multi Line String\n" +
		"Feature Count: 12\n" +
		"Extent: (500000.000000, -10.500000) - (501000.000000, 1000.000000)\n" +
		"Layer SRS WKT:\n" +
		"PROJCRS[\"WGS 84 / UTM zone 32N (a ] bracket)\",\n" +
		"    BASEGEOGCRS[\"WGS 84\",\n" +
		"        ID[\"EPSG\",4326]],\n" +
		"    ID[\"EPSG\",32632]]\n" +
		"Data axis to CRS axis mapping: 1,2\n" +
		"FID Column = fid\n" +
		"Geometry Column = geom\n" +
		"name: String (0.0)\n" +
		"Layer name: String (10.0)\n" +
		"Geometry: Integer64 (0.0) NOT NULL\n" +
		"Feature Count: Real (24.15) DEFAULT 1\n" +
		"a: b (c): Integer(Boolean) (1.0)\n" +
		"\n" +
		"Layer name: no crs\n" +
		"Geometry: None\n" +
		"Feature Count: 3\n" +
		"Layer SRS WKT:\n" +
		"(unknown)\n" +
		"v: Date (0.0)\n"
	driver, layers, err := parseOgrinfo([]byte(out))
	require.NoError(t, err)
	require.Equal(t, "GPKG", driver)
	require.Len(t, layers, 2)
	l := layers[0]
	require.Equal(t, "roads: main (2024)", l.Name)
	require.Equal(t, "Multi Line String", l.GeometryType)
	require.EqualValues(t, 12, l.FeatureCount)
	require.Equal(t, []float64{500000, -10.5, 501000, 1000}, l.extent)
	require.Equal(t, 32632, l.CRS.EPSG, "the root's id, not the base CRS's")
	require.Contains(t, l.CRS.WKT, "(a ] bracket)")
	require.Equal(t, []Field{
		{Name: "name", Type: "String"},
		{Name: "Layer name", Type: "String", Width: 10},
		{Name: "Geometry", Type: "Integer64", NotNull: true},
		{Name: "Feature Count", Type: "Real", Width: 24, Precision: 15},
		{Name: "a: b (c)", Type: "Integer(Boolean)", Width: 1},
	}, l.Fields)
	l = layers[1]
	require.Equal(t, "no crs", l.Name)
	require.Equal(t, "None", l.GeometryType)
	require.Nil(t, l.CRS)
	require.Nil(t, l.extent)
	require.Equal(t, []Field{{Name: "v", Type: "Date"}}, l.Fields)

	_, _, err = parseOgrinfo([]byte("INFO: Open of `x'\n      using driver `CSV' successful.\n"))
	require.ErrorContains(t, err, "it has no vector layer")
	_, _, err = parseOgrinfo([]byte("\nLayer name: x\nLayer SRS WKT:\nPROJCRS[\"a\",\n"))
	require.ErrorContains(t, err, `layer "x": its CRS definition is cut short`)
}

// TestEPSGOf: the code of the root of WKT2 and WKT1 definitions, none for
// a CRS without one.
func TestEPSGOf(t *testing.T) {
	t.Parallel()
	require.Equal(t, 3857, epsgOf(`PROJCRS["x",BASEGEOGCRS["WGS 84",ID["EPSG",4326]],ID["EPSG",3857]]`))
	require.Equal(t, 32632, epsgOf(`PROJCS["x",GEOGCS["WGS 84",AUTHORITY["EPSG","4326"]],AUTHORITY["EPSG","32632"]]`))
	require.Equal(t, 0, epsgOf(`PROJCRS["custom",BASEGEOGCRS["WGS 84",ID["EPSG",4326]],CONVERSION["c",METHOD["m",ID["EPSG",9807]]]]`))
	require.Equal(t, 0, epsgOf(`LOCAL_CS["ID[\"EPSG\",1]"]`))
}
