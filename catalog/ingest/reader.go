package ingest

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/paulmach/orb"

	"github.com/wfhq/wf/catalog/jsonscan"
)

// record is one record read from a source, before any check.
type record struct {
	// index is the record's 0-based position in the source; line its
	// 1-based line (ndjson and csv; 0 otherwise).
	index, line int64
	// featureID is a GeoJSON feature's own "id" member.
	featureID json.RawMessage
	// geometry is a GeoJSON geometry (geojson, ndjson).
	geometry json.RawMessage
	// geom is a geometry already parsed (csv), or geomErr why it is not.
	geom    orb.Geometry
	geomErr error
	// properties is a GeoJSON feature's raw properties (geojson, ndjson);
	// attrs the attributes of a csv row.
	properties json.RawMessage
	attrs      map[string]any
	// err says why the record could not be decoded at all: it is rejected.
	err error
}

// recordReader yields a source's records. next returns io.EOF after the
// last; any other error means the source cannot be read further and ends
// the run.
type recordReader interface {
	next() (*record, error)
}

// splitFeature fills a record from the text of one GeoJSON Feature, which
// the record keeps (b must not be reused). A text that is not an object
// whose "type" is "Feature" makes a rejected record.
func splitFeature(b []byte, rec *record) {
	var typ []byte
	err := jsonscan.ObjectMembers(b, func(key string, value []byte) error {
		switch key {
		case "type":
			typ = value
		case "id":
			rec.featureID = value
		case "geometry":
			rec.geometry = value
		case "properties":
			rec.properties = value
		}
		return nil
	})
	if err != nil {
		rec.err = fmt.Errorf("the record is not a GeoJSON Feature: %w", err)
		return
	}
	if name, err := jsonscan.Unquote(typ); err != nil || name != "Feature" {
		rec.err = fmt.Errorf(`the record's "type" is %s, want "Feature"`, cmp.Or(string(typ), "missing"))
	}
}

// skipBOM drops a UTF-8 byte order mark at the start of r.
func skipBOM(r *bufio.Reader) {
	if b, err := r.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		_, _ = r.Discard(3)
	}
}

// newRecordReader returns the reader of format over src.
func newRecordReader(format string, src io.Reader, in Inputs) (recordReader, error) {
	br := bufio.NewReaderSize(src, 256<<10)
	skipBOM(br)
	switch format {
	case FormatGeoJSON:
		return newGeoJSONReader(br), nil
	case FormatNDJSON:
		return newNDJSONReader(br), nil
	case FormatCSV:
		return newCSVReader(br, in.CSV)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// maxFeature bounds the text of one feature (or one NDJSON or CSV line).
const maxFeature = 64 << 20

// geojsonReader streams the features of a FeatureCollection: json.Decoder
// tokens read the collection's members up to its "features" array, whose
// elements are then cut one by one from the stream (jsonscan does not
// decode them) and the members after it are read as tokens again. It holds
// one feature at a time, never the file.
type geojsonReader struct {
	src   *bufio.Reader
	dec   *json.Decoder
	state int   // 0 before the features, 1 inside them, 2 after
	n     int64 // features read
	off   int64 // bytes of src consumed inside the features array
	base  int64 // offset of the features array in the source
}

func newGeoJSONReader(r *bufio.Reader) *geojsonReader {
	return &geojsonReader{src: r, dec: json.NewDecoder(r)}
}

// syntaxError describes a fatal decoding error with its byte offset.
func (g *geojsonReader) syntaxError(err error) error {
	at := g.base + g.off
	if g.state != 1 {
		at += g.dec.InputOffset()
	}
	return fmt.Errorf("the GeoJSON is malformed near byte %d (after %d features): %w", at, g.n, err)
}

// seekFeatures reads the collection's members up to the features array,
// then hands the stream over from the decoder to the feature cutter.
func (g *geojsonReader) seekFeatures() error {
	tok, err := g.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the source is empty, want a GeoJSON FeatureCollection")
		}
		return g.syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("the source is not a JSON object, want a GeoJSON FeatureCollection")
	}
	for g.dec.More() {
		key, err := g.member()
		if err != nil {
			return err
		}
		if key == "features" {
			tok, err := g.dec.Token()
			if err != nil {
				return g.syntaxError(err)
			}
			if d, ok := tok.(json.Delim); !ok || d != '[' {
				return errors.New(`the FeatureCollection's "features" is not an array`)
			}
			g.base = g.dec.InputOffset()
			g.src = bufio.NewReaderSize(io.MultiReader(g.dec.Buffered(), g.src), 256<<10)
			g.state = 1
			return nil
		}
	}
	return errors.New(`the FeatureCollection has no "features" array`)
}

// member reads one member name and, unless it is "features", its value.
func (g *geojsonReader) member() (string, error) {
	tok, err := g.dec.Token()
	if err != nil {
		return "", g.syntaxError(err)
	}
	key, _ := tok.(string)
	switch key {
	case "features":
		return key, nil
	case "type":
		var typ string
		if err := g.dec.Decode(&typ); err != nil || typ != "FeatureCollection" {
			return "", fmt.Errorf(`the source's "type" is %q, want "FeatureCollection"`, typ)
		}
	default:
		var skip json.RawMessage
		if err := g.dec.Decode(&skip); err != nil {
			return "", g.syntaxError(err)
		}
	}
	return key, nil
}

// next implements recordReader.
func (g *geojsonReader) next() (*record, error) {
	if g.state == 0 {
		if err := g.seekFeatures(); err != nil {
			return nil, err
		}
	}
	if g.state == 2 {
		return nil, io.EOF
	}
	c, err := g.nextByte()
	if err == nil && g.n > 0 && c != ']' {
		if c != ',' {
			return nil, g.syntaxError(fmt.Errorf("want ',' or ']' after a feature, got %q", c))
		}
		c, err = g.nextByte()
	}
	if err != nil {
		return nil, g.syntaxError(fmt.Errorf("the features array is not closed: %w", err))
	}
	if c == ']' {
		return nil, g.finish()
	}
	if c != '{' {
		return nil, g.syntaxError(fmt.Errorf("want a feature object, got %q", c))
	}
	b, err := g.cutObject()
	if err != nil {
		return nil, g.syntaxError(err)
	}
	rec := &record{index: g.n}
	g.n++
	splitFeature(b, rec)
	return rec, nil
}

// nextByte consumes space and returns the next byte.
func (g *geojsonReader) nextByte() (byte, error) {
	for {
		c, err := g.src.ReadByte()
		if err != nil {
			return 0, err
		}
		g.off++
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// cutObject returns the text of the object whose '{' was just read, in a
// new slice.
func (g *geojsonReader) cutObject() ([]byte, error) {
	out := []byte{'{'}
	depth, inString, escaped := 1, false, false
	for {
		chunk, err := g.src.Peek(max(1, g.src.Buffered()))
		if len(chunk) == 0 {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("a feature is cut short: %w", err)
		}
		for i, c := range chunk {
			switch {
			case escaped:
				escaped = false
			case inString:
				switch c {
				case '\\':
					escaped = true
				case '"':
					inString = false
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					out = append(out, chunk[:i+1]...)
					_, _ = g.src.Discard(i + 1)
					g.off += int64(i + 1)
					return out, nil
				}
			}
		}
		out = append(out, chunk...)
		_, _ = g.src.Discard(len(chunk))
		g.off += int64(len(chunk))
		if len(out) > maxFeature {
			return nil, fmt.Errorf("a feature is longer than %d MiB", maxFeature>>20)
		}
	}
}

// maxTrailer bounds the text after the features array (the collection's
// remaining members, such as a bbox).
const maxTrailer = 1 << 20

// finish checks the collection's members after the features array.
func (g *geojsonReader) finish() error {
	g.state = 2
	rest, err := io.ReadAll(io.LimitReader(g.src, maxTrailer+1))
	if err != nil {
		return g.syntaxError(err)
	}
	if len(rest) > maxTrailer {
		return g.syntaxError(fmt.Errorf("more than %d KiB follow the features array", maxTrailer>>10))
	}
	rest = bytes.TrimSpace(rest)
	switch {
	case len(rest) > 0 && rest[0] == '}':
		rest = rest[1:]
	case len(rest) > 0 && rest[0] == ',':
		tail := append([]byte{'{'}, rest[1:]...)
		end, err := jsonscan.SkipValue(tail, 0)
		if err != nil {
			return g.syntaxError(fmt.Errorf("after the features array: %w", err))
		}
		err = jsonscan.ObjectMembers(tail[:end], func(key string, value []byte) error {
			switch key {
			case "features":
				return errors.New(`the FeatureCollection has two "features" arrays`)
			case "type":
				if typ, _ := jsonscan.Unquote(value); typ != "FeatureCollection" {
					return fmt.Errorf(`the source's "type" is %s, want "FeatureCollection"`, value)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		rest = tail[end:]
	default:
		return g.syntaxError(errors.New("the FeatureCollection is not closed after its features array"))
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return g.syntaxError(errors.New("unexpected data after the FeatureCollection"))
	}
	return io.EOF
}

// ndjsonReader reads one GeoJSON Feature per line; a line that is not one
// is rejected on its own.
type ndjsonReader struct {
	sc   *bufio.Scanner
	n    int64
	line int64
}

func newNDJSONReader(r io.Reader) *ndjsonReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxFeature)
	return &ndjsonReader{sc: sc}
}

// next implements recordReader.
func (r *ndjsonReader) next() (*record, error) {
	for r.sc.Scan() {
		r.line++
		b := bytes.TrimSpace(r.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec := &record{index: r.n, line: r.line}
		r.n++
		splitFeature(bytes.Clone(b), rec)
		if rec.err != nil {
			rec.err = fmt.Errorf("line %d: %w", r.line, rec.err)
		}
		return rec, nil
	}
	if err := r.sc.Err(); err != nil {
		return nil, fmt.Errorf("error reading line %d: %w", r.line+1, err)
	}
	return nil, io.EOF
}
