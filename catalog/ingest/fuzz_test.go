package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
)

// fuzzFormats, fuzzIDs and fuzzCSV are the settings a fuzz input picks
// from.
var (
	fuzzFormats = []string{FormatGeoJSON, FormatNDJSON, FormatCSV}
	fuzzIDs     = []string{"id", "code"}
	fuzzCSV     = []*CSVOptions{
		nil,
		{Delimiter: ";"},
		{WKTColumn: "shape"},
		{LonColumn: "east", LatColumn: "north", Delimiter: "\t"},
	}
)

// FuzzRecordReader reads a source of each format and processes every
// record as an ingestion does, short of the database: no input may panic
// or loop, every record must give an envelope that follows the envelope
// schema, and the records must not depend on how the source is cut into
// reads.
func FuzzRecordReader(f *testing.F) {
	regions, err := os.ReadFile("testdata/admin_regions.geojson")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct {
		format, opts uint8
		data         string
	}{
		{0, 4, string(regions)}, // id attribute "code"
		{0, 0, `{"type": "FeatureCollection", "features": [
{"type": "Feature", "properties": {"id": "ok1", "n": 1}, "geometry": {"type": "Point", "coordinates": [10, 45]}},
{"type": "Feature", "properties": {"id": "open", "n": 2.50}, "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}},
{"type": "Feature", "properties": {"id": "nan", "n": NaN}, "geometry": {"type": "Point", "coordinates": [NaN, 45]}},
{"type": "Feature", "properties": {"id": {"nested": true}}, "geometry": {"type": "Point", "coordinates": [10, 45]}},
{"type": "Feature", "id": 7, "properties": null, "geometry": {"type": "LineString", "coordinates": [[10, 45], [11, 46]]}}
], "bbox": [1, 2, 1, 2], "name": "x"}`},
		{0, 0, `{"features": [], "type": "FeatureCollection"} {}`},
		{0, 0, `{"type":"FeatureCollection","features":[{"type":"Feature"} {}]}`},
		{0, 0, "{\"type\":\"FeatureCollection\",\"features\":[\n{\"type\":\"Feature\",\"properties\":{\"id\":\"y\"},\"geometry\":{\"type\":\"Po"},
		{1, 0, `{"type":"Feature","id":17,"properties":null,"geometry":{"type":"Point","coordinates":[1,2]}}
{"type":"Feature","properties":{"id":"b"},"geometry":{"type":"Point","coordinates":[1,2]

{"type":"Feature","properties":{"id":"c","s":"\u00e9"},"geometry":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[3,4]}]}}
`},
		{2, 0, "\ufeffid,name,WKT\n1,square,\"POLYGON ((10 40, 11 40, 11 41, 10 41, 10 40))\"\n" +
			"2,line,\"LINESTRING (0 0, 1 1)\"\n3,bad,\"POLYGON ((0 0, 1 0, 1 1, 0 1))\"\n4,nan,POINT (NaN 1)\n5,short\n" +
			"6,multi,\"MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), EMPTY)\"\n7,c,\"GEOMETRYCOLLECTION (POINT (1 2), LINESTRING EMPTY)\"\n"},
		{2, 1, "id;Latitude;Longitude;kind\nA;45.5;9.2;city\nB;91;9.2;bad\nC;x;1\n\"D;1;2;\"q\"\n"},
		{2, 2, "id,shape\n1,POINT(1 2)\n2,POINT Z (1 2 3)\n3,\"MULTIPOINT ((1 2), (3 4))\"\n"},
		{2, 3, "id\teast\tnorth\nP\t1\t2\nQ\t1e400\t2\n"},
	} {
		f.Add(s.format, s.opts, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, format, opts uint8, data []byte) {
		// The low bits of opts pick the CSV options, the next the id attribute.
		p := &processor{idAttribute: fuzzIDs[int(opts>>2)%len(fuzzIDs)], validFrom: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
		in := Inputs{Format: fuzzFormats[int(format)%len(fuzzFormats)], IDAttribute: p.idAttribute}
		if in.Format == FormatCSV {
			in.CSV = fuzzCSV[int(opts)%len(fuzzCSV)]
		}
		whole := readRecords(t, p, in, bytes.NewReader(data), len(data))
		bytewise := readRecords(t, p, in, iotest.OneByteReader(bytes.NewReader(data)), len(data))
		if whole != bytewise {
			t.Fatalf("%s %q reads differently whole:\n%s\nand a byte at a time:\n%s", in.Format, data, whole, bytewise)
		}
	})
}

// readRecords reads and processes every record of src and returns what
// came out, one line per record.
func readRecords(t *testing.T, p *processor, in Inputs, src io.Reader, size int) string {
	t.Helper()
	rr, err := newRecordReader(in.Format, src, in)
	if err != nil {
		return "cannot read: " + err.Error()
	}
	var out strings.Builder
	for n := 0; ; n++ {
		if n > size+1 {
			t.Fatalf("%s: more records than bytes in the source", in.Format)
		}
		rec, err := rr.next()
		if errors.Is(err, io.EOF) {
			return out.String()
		}
		if err != nil {
			fmt.Fprintf(&out, "broke off: %v\n", err)
			return out.String()
		}
		it := p.process(rec)
		var env reporters.Envelope
		if it.rejected != nil {
			env = *it.rejected
		} else {
			env = it.envelope(store.MergeOutcome{Action: store.MergeCreated, GeoID: uuid.Nil,
				ValidFrom: p.validFrom, TransactionTime: p.validFrom})
		}
		raw, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("%s record %d: the envelope does not encode: %v", in.Format, rec.index, err)
		}
		if _, err := reporters.ValidateEnvelope(raw); err != nil {
			t.Fatalf("%s record %d: %s: %v", in.Format, rec.index, raw, err)
		}
		fmt.Fprintf(&out, "%d %d %s %s\n", rec.index, rec.line, it.version.GeometryHash, raw)
	}
}
