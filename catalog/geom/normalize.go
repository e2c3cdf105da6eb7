package geom

import "github.com/paulmach/orb"

// Normalize rewrites a valid geometry, in place, into its canonical form so
// that equal shapes encode, and hash, equally: polygon exterior rings turn
// counterclockwise and holes clockwise (RFC 7946 section 3.1.6, decided by
// the ring's signed area in the longitude/latitude plane), and negative
// zero coordinates become zero. Ring start points and vertex order
// otherwise stay as given. It returns g.
func Normalize(g orb.Geometry) orb.Geometry {
	switch g := g.(type) {
	case orb.Point:
		return zeroPoint(g)
	case orb.Collection:
		for i, m := range g {
			g[i] = Normalize(m) // a member Point is a value: set it back
		}
		return g
	}
	eachPart(g, func(p orb.Geometry) {
		switch p := p.(type) {
		case orb.MultiPoint: // one point of g's, in its array
			zeroPoints(p)
		case orb.LineString:
			zeroPoints(p)
		case orb.Polygon:
			normalizePolygon(p)
		}
	})
	return g
}

// zeroPoint turns -0 into 0.
func zeroPoint(p orb.Point) orb.Point {
	if p[0] == 0 {
		p[0] = 0
	}
	if p[1] == 0 {
		p[1] = 0
	}
	return p
}

func zeroPoints(ps []orb.Point) {
	for i := range ps {
		ps[i] = zeroPoint(ps[i])
	}
}

// normalizePolygon winds the exterior ring counterclockwise and the holes clockwise.
func normalizePolygon(p orb.Polygon) {
	for i, r := range p {
		zeroPoints(r)
		a := planarSignedArea(r)
		if (i == 0 && a < 0) || (i > 0 && a > 0) {
			r.Reverse()
		}
	}
}

// planarSignedArea is twice the ring's signed area in the longitude/latitude
// plane (positive counterclockwise), by the shoelace formula around the
// first vertex for precision.
func planarSignedArea(r orb.Ring) float64 {
	if len(r) < 3 {
		return 0
	}
	x0, y0 := r[0][0], r[0][1]
	var s float64
	for i := 1; i+1 < len(r); i++ {
		s += (r[i][0]-x0)*(r[i+1][1]-y0) - (r[i+1][0]-x0)*(r[i][1]-y0)
	}
	return s
}
