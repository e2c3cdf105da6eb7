package geom_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"testing/iotest"

	"github.com/wfhq/wf/catalog/geom"
)

// geometrySeeds are GeoJSON geometries, good and bad, as sources hold them.
var geometrySeeds = []string{
	`{"type":"Point","coordinates":[1,2]}`,
	`{"type":"Point","coordinates":[1,2,300]}`,
	` { "coordinates" : [ 1.5e0 , -2 ] , "type" : "Point" } `,
	`{"type":"MultiPoint","coordinates":[[1,2],[3,4]]}`,
	`{"type":"LineString","coordinates":[[1,2],[3,4]]}`,
	`{"type":"MultiLineString","coordinates":[[[1,2],[3,4]]]}`,
	`{"type":"Polygon","coordinates":[[[0,0],[0,1],[1,1],[1,0],[0,0]],[[0.2,0.2],[0.8,0.2],[0.8,0.8],[0.2,0.8],[0.2,0.2]]]}`,
	`{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]]]}`,
	`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]},{"type":"GeometryCollection","geometries":[{"type":"LineString","coordinates":[[0,0],[1e-7,2]]}]}]}`,
	`{"type":"Point","coordinates":["NaN","-Infinity"]}`,
	`{"type":"Point","coordinates":[NaN,Infinity]}`,
	`{"type":"Point","coordinates":[-0,1e400]}`,
	`{"type":"Polygon","coordinates":[[[180,90],[-180,90],[-180,-90],[180,90]]]}`,
	`null`, `[1]`, `{"coordinates":[1,2]}`, `{"type":"Circle","coordinates":[1,2]}`, `{"type":"Point"}`,
	`{"type":"Point","coordinates":[[1,2]]}`, `{"type":"LineString","coordinates":[1,2]}`, `{"type":"GeometryCollection"}`,
	`{"type":"Point","coordinates":[0x1,2]}`, `{"type":"Point","coordinates":[1_0,2]}`, `{"type":"Point","coordinates":[1,2]} x`,
}

// FuzzParseGeoJSON checks that no geometry text makes parsing, validation,
// measuring or encoding panic, and that a valid geometry's canonical
// GeoJSON reads back to itself.
func FuzzParseGeoJSON(f *testing.F) {
	for _, s := range geometrySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		g, err := geom.ParseGeoJSON(raw)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseGeoJSON(%q): empty error", raw)
			}
			return
		}
		if geom.Validate(g) != nil {
			return
		}
		g = geom.Normalize(g)
		_ = geom.Measure(g)
		if _, err := geom.WKB(g); err != nil {
			t.Fatalf("ParseGeoJSON(%q): a valid geometry has no WKB: %v", raw, err)
		}
		canon := geom.AppendGeoJSON(nil, g)
		if !json.Valid(canon) {
			t.Fatalf("ParseGeoJSON(%q): canonical GeoJSON %q is not JSON", raw, canon)
		}
		again, err := geom.ParseGeoJSON(canon)
		if err != nil {
			t.Fatalf("ParseGeoJSON(%q): canonical GeoJSON %q does not read back: %v", raw, canon, err)
		}
		if back := geom.AppendGeoJSON(nil, geom.Normalize(again)); !bytes.Equal(back, canon) {
			t.Fatalf("ParseGeoJSON(%q): canonical GeoJSON %q reads back as %q", raw, canon, back)
		}
	})
}

// FuzzNonFiniteReader checks that the reader leaves valid JSON as it is,
// and gives the same text however its input is cut into reads.
func FuzzNonFiniteReader(f *testing.F) {
	for _, s := range append(geometrySeeds,
		`{"a":[NaN,-Infinity, Infinity,-1.5e-3,true,false,null],"s":"NaN -Infinity \"x\" \\","n":-2}`,
		`[NaN`, `-`, `"\`, `{"p": {"x": nan, "y": -inf}}`, `[1E+5, -e, --1, tru]`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err := io.ReadAll(geom.NonFiniteReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		bytewise, err := io.ReadAll(geom.NonFiniteReader(iotest.OneByteReader(bytes.NewReader(in))))
		if err != nil {
			t.Fatalf("%q, a byte at a time: %v", in, err)
		}
		if !bytes.Equal(whole, bytewise) {
			t.Fatalf("%q reads as %q whole and as %q a byte at a time", in, whole, bytewise)
		}
		if json.Valid(in) && !bytes.Equal(whole, in) {
			t.Fatalf("valid JSON %q reads as %q", in, whole)
		}
	})
}
