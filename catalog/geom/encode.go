package geom

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
)

// AppendGeoJSON appends the canonical GeoJSON text of g to dst: members in
// the order type, coordinates (or geometries), no spaces, and every number
// in its shortest form that reads back to the same float64.
func AppendGeoJSON(dst []byte, g orb.Geometry) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, g.GeoJSONType()...)
	if c, ok := g.(orb.Collection); ok {
		dst = append(dst, `","geometries":[`...)
		for i, m := range c {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendGeoJSON(dst, m)
		}
		return append(dst, "]}"...)
	}
	dst = append(dst, `","coordinates":`...)
	dst = appendCoordinates(dst, g)
	return append(dst, '}')
}

func appendCoordinates(dst []byte, g orb.Geometry) []byte {
	switch g := g.(type) {
	case orb.Point:
		return appendPosition(dst, g)
	case orb.MultiPoint:
		return appendPositions(dst, g)
	case orb.LineString:
		return appendPositions(dst, g)
	case orb.Ring:
		return appendPositions(dst, g)
	case orb.MultiLineString:
		return appendArray(dst, g, func(dst []byte, l orb.LineString) []byte { return appendPositions(dst, l) })
	case orb.Polygon:
		return appendPolygon(dst, g)
	case orb.MultiPolygon:
		return appendArray(dst, g, appendPolygon)
	}
	return append(dst, "[]"...)
}

func appendPolygon(dst []byte, p orb.Polygon) []byte {
	return appendArray(dst, p, func(dst []byte, r orb.Ring) []byte { return appendPositions(dst, r) })
}

func appendPositions(dst []byte, ps []orb.Point) []byte {
	return appendArray(dst, ps, appendPosition)
}

// appendArray appends items as a JSON array, each by appendItem: the one
// loop behind every nesting of coordinates.
func appendArray[T any](dst []byte, items []T, appendItem func([]byte, T) []byte) []byte {
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendItem(dst, it)
	}
	return append(dst, ']')
}

func appendPosition(dst []byte, p orb.Point) []byte {
	dst = append(dst, '[')
	dst = strconv.AppendFloat(dst, p[0], 'f', -1, 64)
	dst = append(dst, ',')
	dst = strconv.AppendFloat(dst, p[1], 'f', -1, 64)
	return append(dst, ']')
}

// WKB returns g as little-endian two-dimensional WKB, the stored and
// hashed binary form.
func WKB(g orb.Geometry) ([]byte, error) {
	b, err := wkb.Marshal(g, binary.LittleEndian)
	if err != nil {
		return nil, fmt.Errorf("error encoding the geometry as WKB: %w", err)
	}
	return b, nil
}

// Hash returns the hex SHA-256 of b: the content hash of a canonical
// encoding (the WKB of a normalised geometry, the canonical JSON of
// attributes).
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// GeoJSONFromWKB appends to dst the canonical GeoJSON text (AppendGeoJSON)
// of a WKB geometry: what a feature table stores as geom gives back the
// text the ingestion reported, number for number.
func GeoJSONFromWKB(dst, b []byte) ([]byte, error) {
	g, err := wkb.Unmarshal(b)
	if err != nil {
		return dst, fmt.Errorf("error decoding a WKB geometry: %w", err)
	}
	return AppendGeoJSON(dst, g), nil
}
