package geom

import (
	"errors"
	"fmt"
	"math"

	"github.com/paulmach/orb"
)

// Validate checks what ParseGeoJSON leaves to it: every coordinate finite,
// longitudes in [-180, 180] and latitudes in [-90, 90], no empty geometry,
// line strings of two positions or more, polygon rings of four or more that
// end where they start. It does not look for self-intersections: PostGIS
// decides OGC validity when the geometry is stored (store.MergeFeatures).
func Validate(g orb.Geometry) error {
	switch g := g.(type) {
	case nil:
		return errors.New("the geometry is missing")
	case orb.Point:
		return checkPoint(g)
	case orb.MultiPoint:
		return checkParts("MultiPoint", "point %d", g, checkPoint)
	case orb.LineString:
		return checkLine(g)
	case orb.MultiLineString:
		return checkParts("MultiLineString", "line %d", g, checkLine)
	case orb.Polygon:
		return checkPolygon(g)
	case orb.MultiPolygon:
		return checkParts("MultiPolygon", "polygon %d", g, checkPolygon)
	case orb.Collection:
		return checkParts("GeometryCollection", "geometries[%d]", g, Validate)
	default:
		return fmt.Errorf("unsupported geometry type %s", g.GeoJSONType())
	}
}

// checkParts checks every part of a multi-geometry of type kind with check,
// naming a bad part with where (a format taking its index); a geometry
// without parts is an error.
func checkParts[S ~[]T, T any](kind, where string, parts S, check func(T) error) error {
	if len(parts) == 0 {
		return fmt.Errorf("the %s is empty", kind)
	}
	for i, p := range parts {
		if err := check(p); err != nil {
			return fmt.Errorf(where+": %w", i, err)
		}
	}
	return nil
}

// checkPoint checks one position.
func checkPoint(p orb.Point) error {
	lon, lat := p[0], p[1]
	switch {
	case math.IsNaN(lon) || math.IsNaN(lat):
		return fmt.Errorf("coordinate [%v, %v] is not a number (NaN)", lon, lat)
	case math.IsInf(lon, 0) || math.IsInf(lat, 0):
		return fmt.Errorf("coordinate [%v, %v] is infinite", lon, lat)
	case lon < -180 || lon > 180:
		return fmt.Errorf("longitude %v is outside [-180, 180]", lon)
	case lat < -90 || lat > 90:
		return fmt.Errorf("latitude %v is outside [-90, 90]", lat)
	}
	return nil
}

// checkLine checks a line string.
func checkLine(l orb.LineString) error {
	if len(l) < 2 {
		return fmt.Errorf("the line string has %d positions, want 2 or more", len(l))
	}
	for i, p := range l {
		if err := checkPoint(p); err != nil {
			return fmt.Errorf("position %d: %w", i, err)
		}
	}
	return nil
}

// checkPolygon checks every ring of a polygon.
func checkPolygon(p orb.Polygon) error {
	if len(p) == 0 {
		return errors.New("the polygon has no rings")
	}
	for i, r := range p {
		name := "the exterior ring"
		if i > 0 {
			name = fmt.Sprintf("hole %d", i)
		}
		if len(r) < 4 {
			return fmt.Errorf("%s has %d positions, want 4 or more (a closed ring)", name, len(r))
		}
		for k, pt := range r {
			if err := checkPoint(pt); err != nil {
				return fmt.Errorf("%s, position %d: %w", name, k, err)
			}
		}
		if first, last := r[0], r[len(r)-1]; first != last {
			return fmt.Errorf("%s is not closed: it starts at [%v, %v] and ends at [%v, %v]",
				name, first[0], first[1], last[0], last[1])
		}
	}
	return nil
}
