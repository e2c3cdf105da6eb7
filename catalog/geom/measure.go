package geom

import (
	"encoding/binary"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/paulmach/orb/planar"
)

// Stats are the platform-derived measures of a geometry (the envelope's
// "stats" member).
type Stats struct {
	// Area is the ellipsoidal area in square metres (see Area).
	Area float64
	// Centroid is the planar centroid in longitude/latitude: area-weighted
	// for polygons, length-weighted for lines, the mean for points (the
	// centroid of a geometry's highest dimension, as PostGIS ST_Centroid).
	Centroid orb.Point
	// BBox is [west, south, east, north] (see BBox): west > east for a
	// geometry that crosses the antimeridian.
	BBox [4]float64
}

// Measure computes the stats of a valid geometry.
func Measure(g orb.Geometry) Stats {
	c, _ := planar.CentroidArea(g)
	return Stats{
		Area:     Area(g),
		Centroid: zeroPoint(c),
		BBox:     BBox(g),
	}
}

// CentroidHex returns the centroid as hex-encoded little-endian WKB
// ("0101000000…"), the seed's form.
func (s Stats) CentroidHex() string {
	h, _ := wkb.MarshalToHex(s.Centroid, binary.LittleEndian) // a Point always encodes
	return h
}
