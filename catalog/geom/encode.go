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
		dst = append(dst, '[')
		for i, l := range g {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendPositions(dst, l)
		}
		return append(dst, ']')
	case orb.Polygon:
		return appendPolygon(dst, g)
	case orb.MultiPolygon:
		dst = append(dst, '[')
		for i, p := range g {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendPolygon(dst, p)
		}
		return append(dst, ']')
	}
	return append(dst, "[]"...)
}

func appendPolygon(dst []byte, p orb.Polygon) []byte {
	dst = append(dst, '[')
	for i, r := range p {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendPositions(dst, r)
	}
	return append(dst, ']')
}

func appendPositions(dst []byte, ps []orb.Point) []byte {
	dst = append(dst, '[')
	for i, p := range ps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendPosition(dst, p)
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
