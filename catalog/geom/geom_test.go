package geom_test

import (
	"io"
	"math"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/geom"
)

func TestParseGeoJSON(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in   string
		want orb.Geometry
	}{
		{`{"type":"Point","coordinates":[1,2]}`, orb.Point{1, 2}},
		{`{"type":"Point","coordinates":[1,2,300]}`, orb.Point{1, 2}},
		{` { "coordinates" : [ 1.5e0 , -2 ] , "type" : "Point" } `, orb.Point{1.5, -2}},
		{`{"type":"MultiPoint","coordinates":[[1,2],[3,4]]}`, orb.MultiPoint{{1, 2}, {3, 4}}},
		{`{"type":"LineString","coordinates":[[1,2],[3,4]]}`, orb.LineString{{1, 2}, {3, 4}}},
		{`{"type":"MultiLineString","coordinates":[[[1,2],[3,4]]]}`, orb.MultiLineString{{{1, 2}, {3, 4}}}},
		{`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`, orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}},
		{`{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]]]}`, orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}}},
		{`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]}`, orb.Collection{orb.Point{1, 2}}},
	}
	for _, c := range ok {
		g, err := geom.ParseGeoJSON([]byte(c.in))
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, g, c.in)
	}
	nan, err := geom.ParseGeoJSON([]byte(`{"type":"Point","coordinates":["NaN","-Infinity"]}`))
	require.NoError(t, err)
	require.True(t, math.IsNaN(nan.(orb.Point)[0]))
	require.True(t, math.IsInf(nan.(orb.Point)[1], -1))

	bad := map[string]string{
		`null`:                                  "missing",
		`[1]`:                                   "not a JSON object",
		`{"coordinates":[1,2]}`:                 `no "type"`,
		`{"type":"Circle","coordinates":[1,2]}`: `unknown geometry type "Circle"`,
		`{"type":"Point"}`:                      `no "coordinates"`,
		`{"type":"Point","coordinates":[1]}`:    "1 numbers",
		`{"type":"Point","coordinates":[1,2,3,4]}`:       "4 numbers",
		`{"type":"Point","coordinates":[[1,2]]}`:         "want a number",
		`{"type":"LineString","coordinates":[1,2]}`:      "want an array",
		`{"type":"Point","coordinates":["a",2]}`:         "got a string",
		`{"type":"GeometryCollection"}`:                  `no "geometries"`,
		`{"type":"GeometryCollection","geometries":[1]}`: "geometries[0]",
	}
	for in, msg := range bad {
		_, err := geom.ParseGeoJSON([]byte(in))
		require.ErrorContains(t, err, msg, in)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, geom.Validate(orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}))
	require.NoError(t, geom.Validate(orb.Point{-180, 90}))
	bad := []struct {
		g   orb.Geometry
		msg string
	}{
		{nil, "missing"},
		{orb.Point{math.NaN(), 1}, "NaN"},
		{orb.Point{math.Inf(1), 1}, "infinite"},
		{orb.Point{180.5, 1}, "longitude 180.5"},
		{orb.Point{1, -91}, "latitude -91"},
		{orb.LineString{{1, 1}}, "1 positions, want 2"},
		{orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}}, "not closed"},
		{orb.Polygon{{{0, 0}, {1, 0}, {0, 0}}}, "3 positions, want 4"},
		{orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}, {{0, 0}, {1, 0}, {1, 1}, {0, 1}}}, "hole 1 is not closed"},
		{orb.Polygon{}, "no rings"},
		{orb.MultiPolygon{}, "the MultiPolygon is empty"},
		{orb.MultiPoint{}, "the MultiPoint is empty"},
		{orb.MultiLineString{}, "the MultiLineString is empty"},
		{orb.Collection{}, "the GeometryCollection is empty"},
		{orb.MultiPoint{{0, 0}, {0, 91}}, "point 1: latitude 91"},
		{orb.MultiLineString{{{0, 0}}}, "line 0: the line string has 1 positions, want 2 or more"},
		{orb.MultiPolygon{{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}}}, "polygon 0: the exterior ring is not closed"},
		{orb.Collection{orb.Point{0, 100}}, "geometries[0]: latitude 100"},
	}
	for _, c := range bad {
		require.ErrorContains(t, geom.Validate(c.g), c.msg, "%v", c.g)
	}
}

func TestNormalizeAndEncode(t *testing.T) {
	t.Parallel()
	cw := orb.Polygon{
		{{0, 0}, {0, 1}, {1, 1}, {1, 0}, {0, 0}},                     // exterior, clockwise
		{{0.2, 0.2}, {0.8, 0.2}, {0.8, 0.8}, {0.2, 0.8}, {0.2, 0.2}}, // hole, counterclockwise
	}
	g := geom.Normalize(cw).(orb.Polygon)
	require.Equal(t, orb.CCW, g[0].Orientation())
	require.Equal(t, orb.CW, g[1].Orientation())
	require.Equal(t,
		`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]],[[0.2,0.2],[0.2,0.8],[0.8,0.8],[0.8,0.2],[0.2,0.2]]]}`,
		string(geom.AppendGeoJSON(nil, g)))

	// Equal shapes hash equally, whatever their winding or zero sign.
	a := geom.Normalize(orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}})
	b := geom.Normalize(orb.Polygon{{{math.Copysign(0, -1), 0}, {1, 1}, {1, 0}, {0, 0}}})
	wa, err := geom.WKB(a)
	require.NoError(t, err)
	wb, err := geom.WKB(b)
	require.NoError(t, err)
	require.Equal(t, geom.Hash(wa), geom.Hash(wb))

	require.Equal(t, `{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1.25,-2]},{"type":"LineString","coordinates":[[0,0],[0.0000001,2]]}]}`,
		string(geom.AppendGeoJSON(nil, orb.Collection{orb.Point{1.25, -2}, orb.LineString{{0, 0}, {1e-7, 2}}})))

	s := geom.Measure(geom.Normalize(orb.Polygon{{{10, 40}, {12, 40}, {12, 44}, {10, 44}, {10, 40}}}))
	require.Equal(t, [4]float64{10, 40, 12, 44}, s.BBox)
	require.InDelta(t, 11, s.Centroid[0], 1e-12)
	require.InDelta(t, 42, s.Centroid[1], 1e-12)
	// Little-endian WKB point: byte order 01, type 1, then x and y.
	require.Equal(t, "010100000000000000000026400000000000004540", s.CentroidHex())
}

func TestNonFiniteReader(t *testing.T) {
	t.Parallel()
	in := `{"a":[NaN,-Infinity, Infinity,-1.5e-3,true,false,null],"s":"NaN -Infinity \"x\" \\","n":-2}`
	// Feed one byte at a time, so every state crosses a read boundary.
	got, err := io.ReadAll(geom.NonFiniteReader(io.LimitReader(&oneByte{s: in}, int64(len(in)))))
	require.NoError(t, err)
	require.Equal(t, `{"a":["NaN","-Infinity", "Infinity",-1.5e-3,true,false,null],"s":"NaN -Infinity \"x\" \\","n":-2}`, string(got))
	// A bare word at the very end is still flushed.
	got, err = io.ReadAll(geom.NonFiniteReader(strings.NewReader(`[NaN`)))
	require.NoError(t, err)
	require.Equal(t, `["NaN"`, string(got))
}

// oneByte reads its string one byte per call.
type oneByte struct {
	s string
	i int
}

func (o *oneByte) Read(p []byte) (int, error) {
	if o.i >= len(o.s) {
		return 0, io.EOF
	}
	p[0] = o.s[o.i]
	o.i++
	return 1, nil
}

func TestBBoxAntimeridian(t *testing.T) {
	t.Parallel()
	fiji := orb.MultiPolygon{
		{{{177, -19}, {180, -19}, {180, -16}, {177, -16}, {177, -19}}},
		{{{-180, -18}, {-179, -18}, {-179, -16}, {-180, -16}, {-180, -18}}},
	}
	require.Equal(t, [4]float64{177, -19, -179, -16}, geom.BBox(fiji), "west > east across the antimeridian")
	require.Equal(t, [4]float64{170, 0, -170, 1}, geom.BBox(orb.MultiPoint{{-170, 0}, {170, 1}}))
	require.Equal(t, [4]float64{-10, 0, 10, 1}, geom.BBox(orb.MultiPoint{{-10, 0}, {10, 1}}), "a box that does not cross stays")
	require.Equal(t, [4]float64{-170, 0, 170, 1}, geom.BBox(orb.LineString{{-170, 0}, {170, 1}}), "one part spans its own interval")
	require.Equal(t, [4]float64{170, -1, -175, 2}, geom.BBox(orb.Collection{
		orb.Point{-175, 2}, orb.LineString{{170, -1}, {175, 0}}, orb.Point{179, 1}}))
}

// TestLengthAndCounts: one degree of the equator and of a meridian at the
// equator have known lengths on WGS84 (a·π/180 and the meridian arc); a
// polygon's length is its perimeter; vertex and part counts are PostGIS's.
func TestLengthAndCounts(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 111319.4908, geom.Length(orb.LineString{{0, 0}, {1, 0}}), 0.01)
	require.InDelta(t, 110574.3886, geom.Length(orb.LineString{{0, 0}, {0, 1}}), 0.01)
	sq := orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}}
	require.InDelta(t, 2*111319.49+2*110574.39, geom.Length(sq), 50)
	require.Zero(t, geom.Length(orb.Point{1, 2}))
	s := geom.Measure(orb.MultiPolygon{sq, sq})
	require.Equal(t, 10, s.Vertices)
	require.Equal(t, 2, s.Parts)
	s = geom.Measure(orb.Collection{orb.Point{0, 0}, orb.LineString{{0, 0}, {1, 1}}})
	require.Equal(t, 3, s.Vertices)
	require.Equal(t, 2, s.Parts)
	require.Equal(t, 1, geom.Measure(orb.Point{0, 0}).Parts)
}

// TestCentroidAcrossAntimeridian: the centroid of a geometry crossing the
// antimeridian lies between its parts across ±180°, not at 0°.
func TestCentroidAcrossAntimeridian(t *testing.T) {
	t.Parallel()
	s := geom.Measure(orb.MultiPoint{{179, 0}, {-179, 0}})
	require.InDelta(t, 180, math.Abs(s.Centroid[0]), 1e-9)
	s = geom.Measure(orb.MultiPoint{{178, 0}, {-178, 0}, {-178, 0}})
	require.InDelta(t, -179.3333333, s.Centroid[0], 1e-6)
	s = geom.Measure(orb.MultiPoint{{10, 0}, {20, 0}})
	require.InDelta(t, 15, s.Centroid[0], 1e-9)
	require.Equal(t, "1", geom.Stats{Centroid: orb.Point{0, 0}}.S2Cell(0)[:1])
}
