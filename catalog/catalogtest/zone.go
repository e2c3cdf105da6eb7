package catalogtest

import "math"

// ZoneArea is the closed-form area in square metres, on the WGS84
// ellipsoid, of the region between two meridians and two parallels
// (Snyder 1987, "Map Projections — A Working Manual", eq. 3-12 integrated
// over longitude): A = Δλ·b²/2·[g(φ2) − g(φ1)], g(φ) = sin φ/(1−e² sin² φ)
// + atanh(e sin φ)/e. The tests measure geometries against it.
func ZoneArea(west, south, east, north float64) float64 {
	const a, f = 6378137.0, 1 / 298.257223563
	e2 := f * (2 - f)
	e := math.Sqrt(e2)
	b2 := a * a * (1 - e2)
	g := func(phi float64) float64 {
		s := math.Sin(phi * math.Pi / 180)
		return s/(1-e2*s*s) + math.Atanh(e*s)/e
	}
	return (east - west) * math.Pi / 180 * b2 / 2 * (g(north) - g(south))
}
