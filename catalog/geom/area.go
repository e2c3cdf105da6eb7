package geom

import (
	"math"

	"github.com/paulmach/orb"
)

// The WGS84 ellipsoid.
const (
	// wgs84A is the equatorial radius in metres.
	wgs84A = 6378137.0
	// wgs84F is the flattening.
	wgs84F = 1 / 298.257223563
)

// authalic holds the constants of the WGS84 authalic sphere, the sphere
// with the ellipsoid's surface area onto which latitudes map preserving
// area.
type authalic struct {
	e2, e float64 // first eccentricity, squared and not
	qp    float64 // q at the pole
	r2    float64 // radius of the authalic sphere, squared (m²)
}

// wgs84Authalic is computed once; it is a constant, not state.
var wgs84Authalic = newAuthalic(wgs84A, wgs84F)

func newAuthalic(a, f float64) authalic {
	e2 := f * (2 - f)
	e := math.Sqrt(e2)
	qp := 1 + (1-e2)*math.Atanh(e)/e
	return authalic{e2: e2, e: e, qp: qp, r2: a * a * qp / 2}
}

// sinBeta returns the sine of the authalic latitude of geodetic latitude
// phi (radians): q(phi)/q(90°), with
// q(phi) = (1-e²)·(sin phi/(1-e² sin² phi) + atanh(e sin phi)/e).
func (c authalic) sinBeta(phi float64) float64 {
	s := math.Sin(phi)
	q := (1 - c.e2) * (s/(1-c.e2*s*s) + math.Atanh(c.e*s)/c.e)
	return math.Max(-1, math.Min(1, q/c.qp))
}

// Area returns the area of g on the WGS84 ellipsoid in square metres: the
// sum of its polygons' areas (holes subtracted), 0 for points and lines.
//
// Method: every vertex's geodetic latitude is mapped to its authalic
// latitude, which carries the ellipsoid equal-area onto the authalic sphere
// (radius 6371007.2 m); there each ring's area is the sum, over its edges
// taken as great-circle arcs, of the signed spherical excess of the
// quadrilateral between the edge, the equator and the edges' meridians,
// tan(E/2) = tan(Δλ/2)·(tan(β1/2)+tan(β2/2)) / (1+tan(β1/2)·tan(β2/2))
// (Karney 2013, "Algorithms for geodesics", eq. 60, on the sphere). A ring
// that winds around a pole covers the cap on the pole's side. The only
// approximation is the edges' shape: great circles on the authalic sphere
// instead of geodesics on the ellipsoid, which differ by far less than 0.01%
// of the area for edges up to a few hundred kilometres (see area_test.go for
// the measured error against GeographicLib).
func Area(g orb.Geometry) float64 {
	switch g := g.(type) {
	case orb.Polygon:
		return polygonArea(g)
	case orb.MultiPolygon:
		var sum float64
		for _, p := range g {
			sum += polygonArea(p)
		}
		return sum
	case orb.Collection:
		var sum float64
		for _, m := range g {
			sum += Area(m)
		}
		return sum
	case orb.Ring:
		return ringArea(g)
	}
	return 0
}

// polygonArea is the exterior ring's area less its holes'.
func polygonArea(p orb.Polygon) float64 {
	if len(p) == 0 {
		return 0
	}
	a := ringArea(p[0])
	for _, h := range p[1:] {
		a -= ringArea(h)
	}
	return math.Max(a, 0)
}

// ringArea returns the unsigned area of a closed ring in square metres.
func ringArea(r orb.Ring) float64 {
	n := len(r)
	if n < 4 {
		return 0
	}
	c := wgs84Authalic
	const rad = math.Pi / 180
	// t = tan(β/2), computed once per vertex.
	tanHalf := func(p orb.Point) float64 {
		sb := c.sinBeta(p[1] * rad)
		// tan(β/2) = sin β / (1 + cos β), with cos β >= 0.
		return sb / (1 + math.Sqrt(math.Max(0, 1-sb*sb)))
	}
	var excess, winding float64
	t1 := tanHalf(r[0])
	for i := 0; i+1 < n; i++ {
		t2 := tanHalf(r[i+1])
		dl := math.Remainder((r[i+1][0]-r[i][0])*rad, 2*math.Pi) // in [-π, π]
		winding += dl
		excess += 2 * math.Atan2(math.Tan(dl/2)*(t1+t2), 1+t1*t2)
		t1 = t2
	}
	s := math.Abs(excess)
	if math.Abs(winding) > math.Pi {
		// The ring goes once around a pole: the sum is the band between the
		// ring and the equator; the ring's cap is the rest of the hemisphere.
		s = 2*math.Pi - s
	}
	return s * c.r2
}
