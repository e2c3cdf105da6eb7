// Package cql2 reads OGC CQL2 filters, in their text and JSON encodings,
// into the store's feature filter expressions (store.FeatureExpr), which
// the store compiles to parameterised SQL: no text of a filter reaches a
// statement. It covers Basic CQL2 (comparisons, AND, OR, NOT, LIKE,
// BETWEEN, IN, IS NULL over properties) and the spatial functions
// (S_INTERSECTS, S_DISJOINT, S_EQUALS, S_TOUCHES, S_WITHIN, S_CONTAINS,
// S_OVERLAPS, S_CROSSES) between the feature's geometry and a literal
// geometry (WKT or BBOX in text, GeoJSON or bbox in JSON), in CRS84.
package cql2

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wfhq/wf/engine/store"
)

// MaxLength bounds a filter's text, and MaxDepth its nesting.
const (
	MaxLength = 64 << 10
	MaxDepth  = 64
)

// flipSpatial is the operator with its arguments swapped: a literal first
// and the geometry property second.
var flipSpatial = map[string]string{"S_WITHIN": "S_CONTAINS", "S_CONTAINS": "S_WITHIN"}

// flipCompare is the comparison with its sides swapped.
var flipCompare = map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// spatial builds a spatial expression of op (upper case) over two
// arguments, one of them the geometry property (isProp) and the other a
// literal GeoJSON geometry.
func spatial(op string, a, b spatialArg) (store.FeatureExpr, error) {
	if _, ok := store.SpatialOps[op]; !ok {
		return nil, fmt.Errorf("unknown spatial function %s", op)
	}
	switch {
	case a.prop && !b.prop:
		return store.ExprSpatial{Op: op, Geometry: b.geom}, nil
	case b.prop && !a.prop:
		if f, ok := flipSpatial[op]; ok {
			op = f
		}
		return store.ExprSpatial{Op: op, Geometry: a.geom}, nil
	}
	return nil, fmt.Errorf("%s compares the feature's geometry with a literal geometry: give one property and one geometry", op)
}

// spatialArg is one argument of a spatial function.
type spatialArg struct {
	prop bool
	geom json.RawMessage
}

// bboxPolygon returns the GeoJSON polygon of a bbox (4 or 6 numbers).
func bboxPolygon(v []float64) (json.RawMessage, error) {
	if len(v) == 6 {
		v = []float64{v[0], v[1], v[3], v[4]}
	}
	if len(v) != 4 {
		return nil, fmt.Errorf("a bbox has 4 numbers (or 6 with heights), got %d", len(v))
	}
	w, s, e, n := v[0], v[1], v[2], v[3]
	if s > n || w > e {
		return nil, fmt.Errorf("a bbox's lower corner [%v, %v] must be below and west of its upper corner [%v, %v]", w, s, e, n)
	}
	return json.Marshal(map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{w, s}, {e, s}, {e, n}, {w, n}, {w, s}}}})
}

// checkGeoJSON checks a GeoJSON geometry's shape enough that PostGIS reads
// it: a known type with coordinates (or geometries) of the right depth.
func checkGeoJSON(g map[string]any, depth int) error {
	if depth > 8 {
		return fmt.Errorf("a geometry collection nests too deep")
	}
	typ, _ := g["type"].(string)
	want, ok := map[string]int{"Point": 1, "LineString": 2, "Polygon": 3, "MultiPoint": 2, "MultiLineString": 3, "MultiPolygon": 4}[typ]
	if typ == "GeometryCollection" {
		geoms, ok := g["geometries"].([]any)
		if !ok {
			return fmt.Errorf("a GeometryCollection has a geometries array")
		}
		for _, x := range geoms {
			m, ok := x.(map[string]any)
			if !ok {
				return fmt.Errorf("a GeometryCollection holds geometries")
			}
			if err := checkGeoJSON(m, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if !ok {
		return fmt.Errorf("%q is not a GeoJSON geometry type", typ)
	}
	if err := checkCoords(g["coordinates"], want); err != nil {
		return err
	}
	return checkParts(typ, g["coordinates"])
}

// checkParts checks what PostGIS would let through and mean nothing: a
// line of one position, a polygon ring of fewer than 4 or not closed.
func checkParts(typ string, c any) error {
	list := func(x any) []any { l, _ := x.([]any); return l }
	line := func(x any) error {
		if len(list(x)) < 2 {
			return fmt.Errorf("a line has 2 positions or more")
		}
		return nil
	}
	ring := func(x any) error {
		r := list(x)
		if len(r) < 4 || fmt.Sprint(r[0]) != fmt.Sprint(r[len(r)-1]) {
			return fmt.Errorf("a polygon ring has 4 positions or more, the last equal to the first")
		}
		return nil
	}
	each := func(x any, f func(any) error) error {
		for _, part := range list(x) {
			if err := f(part); err != nil {
				return err
			}
		}
		return nil
	}
	switch typ {
	case "LineString":
		return line(c)
	case "MultiLineString":
		return each(c, line)
	case "Polygon":
		return each(c, ring)
	case "MultiPolygon":
		return each(c, func(p any) error { return each(p, ring) })
	}
	return nil
}

// checkCoords checks nested coordinate arrays of depth (1: a position).
func checkCoords(c any, depth int) error {
	arr, ok := c.([]any)
	if !ok {
		return fmt.Errorf("coordinates must be arrays nested %d deep", depth)
	}
	if depth == 1 {
		if len(arr) < 2 || len(arr) > 3 {
			return fmt.Errorf("a position has 2 or 3 numbers")
		}
		for _, x := range arr {
			if _, ok := x.(float64); !ok {
				return fmt.Errorf("a position holds numbers")
			}
		}
		return nil
	}
	if len(arr) == 0 {
		return fmt.Errorf("empty coordinates")
	}
	for _, x := range arr {
		if err := checkCoords(x, depth-1); err != nil {
			return err
		}
	}
	return nil
}

// upper is strings.ToUpper, for keywords.
func upper(s string) string { return strings.ToUpper(s) }
