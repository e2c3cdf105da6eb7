package geom_test

import (
	"math"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geo"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/catalog/geom"
)

// box returns a counterclockwise lon/lat rectangle whose edges along the
// parallels have a vertex every step degrees, so that the great-circle (or
// geodesic) edges between them stay close to the parallels.
func box(west, south, east, north, step float64) orb.Polygon {
	var r orb.Ring
	n := max(1, int(math.Round((east-west)/step)))
	for i := 0; i <= n; i++ {
		r = append(r, orb.Point{west + (east-west)*float64(i)/float64(n), south})
	}
	for i := n; i >= 0; i-- {
		r = append(r, orb.Point{west + (east-west)*float64(i)/float64(n), north})
	}
	return orb.Polygon{append(r, r[0])}
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / want }

func TestAreaClosedForm(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                     string
		west, south, east, north float64
	}{
		{"equator 1°", 0, 0, 1, 1},
		{"mid latitude 1°", 10, 45, 11, 46},
		{"Colorado", -109.046667, 37, -102.046667, 41},
		{"high latitude", 20, 69, 30, 71},
		{"southern", 140, -40, 150, -30},
		{"tiny 0.001°", 7.3, 46.1, 7.301, 46.101},
	}
	for _, c := range cases {
		want := catalogtest.ZoneArea(c.west, c.south, c.east, c.north)
		// 0.01° steps: the great-circle edges follow the parallels closely.
		got := geom.Area(box(c.west, c.south, c.east, c.north, 0.01))
		require.Less(t, relErr(got, want), 1e-4, "%s: got %.1f m², want %.1f m²", c.name, got, want)
		// The orientation does not matter.
		p := box(c.west, c.south, c.east, c.north, 0.01)
		p[0].Reverse()
		require.InDelta(t, got, geom.Area(p), got*1e-12, c.name)
	}
}

// TestAreaGeographicLib compares with the exact geodesic polygon areas of
// GeographicLib 2.1.2 (Karney 2013, "Algorithms for geodesics"), computed
// with its Planimeter tool for the same vertices (`Planimeter -p 10`, one
// "lat lon" line per vertex). Its edges are ellipsoidal geodesics; ours are
// great circles on the authalic sphere: the difference is the method's
// error, and orb/geo.Area (a sphere of radius 6378137 m) is measured too.
func TestAreaGeographicLib(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ring orb.Ring
		want float64
	}{
		{"1° square at the equator", orb.Ring{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}, 12308778361.5},
		{"Sicily (three capes)", orb.Ring{{15.65, 38.27}, {12.43, 37.80}, {15.14, 36.69}, {15.65, 38.27}}, 23768032188.3},
		{"Lesotho (simplified)", orb.Ring{{28.5, -28.6}, {29.4, -28.8}, {29.5, -29.7}, {28.2, -30.6}, {27.0, -30.1}, {27.0, -29.2}, {28.5, -28.6}}, lesothoArea},
	}
	for _, c := range cases {
		got := geom.Area(orb.Polygon{c.ring})
		e := relErr(got, c.want)
		orbErr := relErr(geo.Area(orb.Polygon{c.ring}), c.want)
		t.Logf("%s: %.1f m² (GeographicLib %.1f): error %.5f%%; orb/geo.Area error %.3f%%", c.name, got, c.want, 100*e, 100*orbErr)
		require.Less(t, e, 1e-4, c.name)
	}
}

// lesothoArea is GeographicLib's area of the Lesotho ring above.
const lesothoArea = 37718719587.9

func TestAreaKinds(t *testing.T) {
	t.Parallel()
	sq := orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}}
	hole := orb.Ring{{0.25, 0.25}, {0.25, 0.75}, {0.75, 0.75}, {0.75, 0.25}, {0.25, 0.25}}
	full := geom.Area(sq)
	require.Zero(t, geom.Area(orb.Point{1, 2}))
	require.Zero(t, geom.Area(orb.LineString{{0, 0}, {1, 1}}))
	withHole := geom.Area(orb.Polygon{sq[0], hole})
	require.InDelta(t, full-geom.Area(orb.Polygon{hole}), withHole, 1)
	require.InDelta(t, 2*full, geom.Area(orb.MultiPolygon{sq, sq}), 1)
	require.InDelta(t, full, geom.Area(orb.Collection{sq, orb.Point{5, 5}}), 1)
	// A ring around the south pole covers the cap: the zone south of -80°.
	var cap orb.Ring
	for lon := -180.0; lon < 180; lon += 1 {
		cap = append(cap, orb.Point{lon, -80})
	}
	cap = append(cap, cap[0])
	require.Less(t, relErr(geom.Area(orb.Polygon{cap}), catalogtest.ZoneArea(-180, -90, 180, -80)), 1e-3)
}
