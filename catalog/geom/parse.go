// Package geom turns the geometry of one source record into what wf stores:
// it parses GeoJSON (and WKT) geometries into orb values, validates them
// (types, structure, closed rings, coordinate ranges, finite numbers),
// normalises them (RFC 7946 ring winding, no negative zero), measures them
// (ellipsoidal area, planar centroid, bounding box) and encodes them
// canonically (GeoJSON, WKB and their content hash).
//
// The package is pure: no I/O and no state, so it is safe for concurrent use.
package geom

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/paulmach/orb"

	"github.com/wfhq/wf/catalog/jsonscan"
)

// maxCollectionDepth bounds how deeply GeometryCollections may nest.
const maxCollectionDepth = 8

// ParseGeoJSON parses a GeoJSON geometry object (RFC 7946 section 3.1) into
// an orb geometry. It checks the structure (a known type, arrays nested as
// the type requires, positions of two or three numbers, the third, the
// altitude, being dropped) but not the values; call Validate for those.
// A coordinate may also be NaN, Infinity or -Infinity, bare (as Python's
// json module writes them) or quoted: it parses to the non-finite number
// that Validate rejects, so the record fails alone.
func ParseGeoJSON(raw []byte) (orb.Geometry, error) {
	return parseGeometry(raw, 0)
}

func parseGeometry(raw []byte, depth int) (orb.Geometry, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, errors.New("the geometry is missing")
	}
	if raw[0] != '{' {
		return nil, errors.New("the geometry is not a JSON object")
	}
	var typ, coords, members []byte
	err := jsonscan.ObjectMembers(raw, func(key string, value []byte) error {
		switch key {
		case "type":
			typ = value
		case "coordinates":
			coords = value
		case "geometries":
			members = value
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the geometry is not a GeoJSON geometry object: %w", err)
	}
	if typ == nil {
		return nil, errors.New(`the geometry has no "type"`)
	}
	name, err := jsonscan.Unquote(typ)
	if err != nil {
		return nil, fmt.Errorf(`the geometry's "type": %w`, err)
	}
	if name == "GeometryCollection" {
		if depth >= maxCollectionDepth {
			return nil, fmt.Errorf("GeometryCollections are nested more than %d deep", maxCollectionDepth)
		}
		if members == nil || members[0] != '[' {
			return nil, errors.New(`the GeometryCollection has no "geometries" array`)
		}
		var c orb.Collection
		err := jsonscan.ArrayElements(members, func(i int, m []byte) error {
			g, err := parseGeometry(m, depth+1)
			if err != nil {
				return fmt.Errorf("geometries[%d]: %w", i, err)
			}
			c = append(c, g)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	if _, ok := coordinateLevels[name]; !ok {
		return nil, fmt.Errorf("unknown geometry type %q: want Point, MultiPoint, LineString, MultiLineString, Polygon, MultiPolygon or GeometryCollection", name)
	}
	if coords == nil || bytes.Equal(coords, []byte("null")) {
		return nil, fmt.Errorf(`the %s has no "coordinates"`, name)
	}
	p := coordParser{b: coords}
	g, err := p.geometry(name)
	if err == nil {
		if p.skipSpace(); p.i < len(p.b) {
			err = fmt.Errorf("unexpected data at byte %d", p.i)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s coordinates: %w", name, err)
	}
	return g, nil
}

// coordinateLevels is how many array levels a type's coordinates have,
// counting the position itself.
var coordinateLevels = map[string]int{
	"Point":           1,
	"MultiPoint":      2,
	"LineString":      2,
	"MultiLineString": 3,
	"Polygon":         3,
	"MultiPolygon":    4,
}

// coordParser reads nested coordinate arrays straight into orb values.
type coordParser struct {
	b []byte
	i int
}

// geometry parses the coordinates of a geometry of type name.
func (p *coordParser) geometry(name string) (orb.Geometry, error) {
	switch name {
	case "Point":
		return p.position()
	case "MultiPoint":
		ps, err := p.positions()
		return orb.MultiPoint(ps), err
	case "LineString":
		ps, err := p.positions()
		return orb.LineString(ps), err
	case "MultiLineString":
		m, err := arrayOf(p, func() (orb.LineString, error) {
			ps, err := p.positions()
			return orb.LineString(ps), err
		})
		return orb.MultiLineString(m), err
	case "Polygon":
		return p.polygon()
	default: // MultiPolygon
		m, err := arrayOf(p, p.polygon)
		return orb.MultiPolygon(m), err
	}
}

func (p *coordParser) skipSpace() { p.i = jsonscan.SkipSpace(p.b, p.i) }

// array reads a JSON array, calling elem for each element.
func (p *coordParser) array(elem func() error) error {
	p.skipSpace()
	if p.i >= len(p.b) || p.b[p.i] != '[' {
		return fmt.Errorf("want an array at byte %d", p.i)
	}
	p.i++
	for k := 0; ; k++ {
		p.skipSpace()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return nil
		}
		if k > 0 {
			if p.i >= len(p.b) || p.b[p.i] != ',' {
				return fmt.Errorf("want ',' or ']' at byte %d", p.i)
			}
			p.i++
		}
		if err := elem(); err != nil {
			return fmt.Errorf("[%d]: %w", k, err)
		}
	}
}

// arrayOf reads a JSON array whose elements elem reads: the elements read
// (the one that failed too, as read so far).
func arrayOf[T any](p *coordParser, elem func() (T, error)) ([]T, error) {
	var out []T
	err := p.array(func() error {
		v, err := elem()
		out = append(out, v)
		return err
	})
	return out, err
}

func (p *coordParser) polygon() (orb.Polygon, error) {
	rings, err := arrayOf(p, func() (orb.Ring, error) {
		ps, err := p.positions()
		return orb.Ring(ps), err
	})
	return orb.Polygon(rings), err
}

func (p *coordParser) positions() ([]orb.Point, error) {
	ps := make([]orb.Point, 0, 8)
	err := p.array(func() error {
		pt, err := p.position()
		ps = append(ps, pt)
		return err
	})
	return ps, err
}

// position reads one position: two or three numbers.
func (p *coordParser) position() (orb.Point, error) {
	var vals [3]float64
	k := 0
	err := p.array(func() error {
		v, err := p.number()
		if k < len(vals) {
			vals[k] = v
		}
		k++
		return err
	})
	if err != nil {
		return orb.Point{}, err
	}
	if k < 2 || k > 3 {
		return orb.Point{}, fmt.Errorf("a position has %d numbers, want 2 (longitude, latitude) or 3 (and altitude)", k)
	}
	return orb.Point{vals[0], vals[1]}, nil
}

// nonFinite are the words, bare or quoted, that stand for non-finite coordinates.
var nonFinite = map[string]float64{
	"NaN": math.NaN(), "Infinity": math.Inf(1), "-Infinity": math.Inf(-1),
	`"NaN"`: math.NaN(), `"Infinity"`: math.Inf(1), `"-Infinity"`: math.Inf(-1),
}

// number reads one JSON number, or one of the nonFinite words.
func (p *coordParser) number() (float64, error) {
	p.skipSpace()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '"' {
		end := bytes.IndexByte(p.b[p.i+1:], '"')
		if end >= 0 {
			if v, ok := nonFinite[string(p.b[p.i:p.i+end+2])]; ok {
				p.i += end + 2
				return v, nil
			}
		}
		return 0, fmt.Errorf("want a number at byte %d, got a string", start)
	}
	for p.i < len(p.b) {
		c := p.b[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			p.i++
			continue
		}
		break
	}
	if p.i == start {
		return 0, fmt.Errorf("want a number at byte %d", start)
	}
	lit := p.b[start:p.i]
	if v, ok := nonFinite[string(lit)]; ok {
		return v, nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if errors.Is(err, strconv.ErrRange) {
		return f, nil // ±Inf or 0: Validate rejects the infinities
	}
	if err != nil || !isJSONNumber(lit) {
		return 0, fmt.Errorf("bad number %q at byte %d", lit, start)
	}
	return f, nil
}

// isJSONNumber reports whether lit has JSON's number syntax (ParseFloat
// also takes hex, underscores, "inf" and a leading '+').
func isJSONNumber(lit []byte) bool {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(lit) && lit[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(lit)
}
