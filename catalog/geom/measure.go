package geom

import (
	"encoding/binary"
	"math"

	"github.com/golang/geo/s2"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/paulmach/orb/planar"
)

// Stats are the platform-derived measures of a geometry (the envelope's
// geometry stats).
type Stats struct {
	// Area is the ellipsoidal area in square metres (see Area).
	Area float64
	// Length is the geodesic length in metres of the lines, and of the
	// rings of the polygons (their perimeter), on the WGS84 ellipsoid (see
	// Length).
	Length float64
	// Centroid is the planar centroid in longitude/latitude: area-weighted
	// for polygons, length-weighted for lines, the mean for points (the
	// centroid of a geometry's highest dimension, as PostGIS ST_Centroid).
	// For a geometry that crosses the antimeridian it is taken with the
	// western longitudes moved by 360°, then brought back into ±180°, so it
	// lies near the geometry, not on the other side of the world.
	Centroid orb.Point
	// BBox is [west, south, east, north] (see BBox): west > east for a
	// geometry that crosses the antimeridian.
	BBox [4]float64
	// Vertices is the number of positions (a ring's closing one
	// included, as PostGIS ST_NPoints counts them).
	Vertices int
	// Parts is the number of single geometries: 1, or the members of a
	// multi-geometry or collection (as PostGIS ST_NumGeometries).
	Parts int
}

// Measure computes the stats of a valid geometry.
func Measure(g orb.Geometry) Stats {
	s := Stats{Area: Area(g), Length: Length(g), BBox: BBox(g), Vertices: countVertices(g), Parts: countParts(g)}
	if s.BBox[0] > s.BBox[2] {
		c, _ := planar.CentroidArea(shiftWest(g))
		if c[0] > 180 {
			c[0] -= 360
		}
		s.Centroid = zeroPoint(c)
	} else {
		c, _ := planar.CentroidArea(g)
		s.Centroid = zeroPoint(c)
	}
	return s
}

// CentroidHex returns the centroid as hex-encoded little-endian WKB
// ("0101000000…"), the seed's form.
func (s Stats) CentroidHex() string {
	h, _ := wkb.MarshalToHex(s.Centroid, binary.LittleEndian) // a Point always encodes
	return h
}

// S2Cell returns the token of the S2 cell at level (0 to 30) that holds
// the centroid (level 13 cells are about 1 km², 30 about 1 cm²).
func (s Stats) S2Cell(level int) string {
	ll := s2.LatLngFromDegrees(s.Centroid[1], s.Centroid[0])
	return s2.CellIDFromLatLng(ll).Parent(level).ToToken()
}

// shiftWest returns a copy of g with every negative longitude moved by
// 360°, so that a geometry crossing the antimeridian is contiguous.
func shiftWest(g orb.Geometry) orb.Geometry {
	switch g := g.(type) {
	case orb.Point:
		if g[0] < 0 {
			g[0] += 360
		}
		return g
	case orb.Collection:
		out := make(orb.Collection, len(g))
		for i, m := range g {
			out[i] = shiftWest(m)
		}
		return out
	}
	g = orb.Clone(g)
	eachPath(g, func(ps []orb.Point, _ bool) { // the clone's own positions
		for i := range ps {
			if ps[i][0] < 0 {
				ps[i][0] += 360
			}
		}
	})
	return g
}

// eachPath calls fn with every run of positions of each part of g
// (eachPart): a point, a line, a polygon's rings; linear says whether it
// is a line or a ring (whose segments have a length).
func eachPath(g orb.Geometry, fn func(ps []orb.Point, linear bool)) {
	eachPart(g, func(p orb.Geometry) {
		switch p := p.(type) {
		case orb.Point:
			fn([]orb.Point{p}, false)
		case orb.MultiPoint:
			fn(p, false)
		case orb.LineString:
			fn(p, true)
		case orb.Polygon:
			for _, r := range p {
				fn(r, true)
			}
		}
	})
}

// countVertices counts g's positions.
func countVertices(g orb.Geometry) int {
	n := 0
	eachPath(g, func(ps []orb.Point, _ bool) { n += len(ps) })
	return n
}

// countParts counts g's single geometries.
func countParts(g orb.Geometry) int {
	switch g := g.(type) {
	case orb.MultiPoint:
		return len(g)
	case orb.MultiLineString:
		return len(g)
	case orb.MultiPolygon:
		return len(g)
	case orb.Collection:
		return len(g)
	}
	return 1
}

// Length returns the geodesic length in metres of g's lines and polygon
// rings on the WGS84 ellipsoid, segment by segment (see distance), as
// PostGIS's geography ST_Length and ST_Perimeter compute it.
func Length(g orb.Geometry) float64 {
	n := 0.0
	eachPath(g, func(ps []orb.Point, linear bool) {
		for i := 1; linear && i < len(ps); i++ {
			n += distance(ps[i-1], ps[i])
		}
	})
	return n
}

// distance returns the geodesic distance in metres between two positions
// on the WGS84 ellipsoid: Vincenty's inverse formula (sub-millimetre; the
// tests agree with PostGIS's GeographicLib within 1e-7), or, where it does
// not converge, Andoyer–Lambert's (the flattening's first-order correction
// to the great circle). Both are poor for a segment between nearly
// antipodal positions (off by up to 0.2%), which real geometries do not
// have.
func distance(p, q orb.Point) float64 {
	if d, ok := vincenty(p, q); ok {
		return d
	}
	return andoyerLambert(p, q)
}

// vincenty is Vincenty's (1975) inverse solution; ok is false when it
// does not converge.
func vincenty(p, q orb.Point) (float64, bool) {
	const rad = math.Pi / 180
	a, f := wgs84A, wgs84F
	b := a * (1 - f)
	L := (q[0] - p[0]) * rad
	u1 := math.Atan((1 - f) * math.Tan(p[1]*rad))
	u2 := math.Atan((1 - f) * math.Tan(q[1]*rad))
	su1, cu1, su2, cu2 := math.Sin(u1), math.Cos(u1), math.Sin(u2), math.Cos(u2)
	lambda := L
	for range 200 {
		sl, cl := math.Sin(lambda), math.Cos(lambda)
		sinSigma := math.Hypot(cu2*sl, cu1*su2-su1*cu2*cl)
		if sinSigma == 0 {
			return 0, true // the same point
		}
		cosSigma := su1*su2 + cu1*cu2*cl
		sigma := math.Atan2(sinSigma, cosSigma)
		sinAlpha := cu1 * cu2 * sl / sinSigma
		cos2Alpha := 1 - sinAlpha*sinAlpha
		cos2SigmaM := 0.0
		if cos2Alpha != 0 {
			cos2SigmaM = cosSigma - 2*su1*su2/cos2Alpha
		}
		c := f / 16 * cos2Alpha * (4 + f*(4-3*cos2Alpha))
		prev := lambda
		lambda = L + (1-c)*f*sinAlpha*(sigma+c*sinSigma*(cos2SigmaM+c*cosSigma*(-1+2*cos2SigmaM*cos2SigmaM)))
		if math.Abs(lambda-prev) < 1e-12 {
			u2 := cos2Alpha * (a*a - b*b) / (b * b)
			A := 1 + u2/16384*(4096+u2*(-768+u2*(320-175*u2)))
			B := u2 / 1024 * (256 + u2*(-128+u2*(74-47*u2)))
			dSigma := B * sinSigma * (cos2SigmaM + B/4*(cosSigma*(-1+2*cos2SigmaM*cos2SigmaM)-
				B/6*cos2SigmaM*(-3+4*sinSigma*sinSigma)*(-3+4*cos2SigmaM*cos2SigmaM)))
			return b * A * (sigma - dSigma), true
		}
	}
	return 0, false
}

// andoyerLambert is the great-circle distance corrected to first order in
// the flattening.
func andoyerLambert(p, q orb.Point) float64 {
	const rad = math.Pi / 180
	f := (p[1] + q[1]) / 2 * rad
	g := (p[1] - q[1]) / 2 * rad
	l := (p[0] - q[0]) / 2 * rad
	sg, cg, sl, cl, sf, cf := math.Sin(g), math.Cos(g), math.Sin(l), math.Cos(l), math.Sin(f), math.Cos(f)
	s := sg*sg*cl*cl + cf*cf*sl*sl
	c := cg*cg*cl*cl + sf*sf*sl*sl
	if s == 0 {
		return 0
	}
	if c == 0 {
		return math.Pi * wgs84A * (1 - wgs84F/2) // antipodes: about half a meridian ellipse
	}
	w := math.Atan(math.Sqrt(s / c))
	r := math.Sqrt(s*c) / w
	d := 2 * w * wgs84A
	h1 := (3*r - 1) / (2 * c)
	h2 := (3*r + 1) / (2 * s)
	return d * (1 + wgs84F*h1*sf*sf*cg*cg - wgs84F*h2*cf*cf*sg*sg)
}
