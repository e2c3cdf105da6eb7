package geom

import (
	"sort"

	"github.com/paulmach/orb"
)

// BBox returns g's bounding box as RFC 7946 section 5.2 defines it:
// [west, south, east, north], where a geometry that crosses the
// antimeridian (a MultiPolygon split at ±180°, say, or points on both
// sides of it) has west > east. The box is the smallest one in longitude:
// each part (a point, a line, a polygon) spans its own longitude interval,
// and the box leaves out the widest gap between the parts' intervals
// around the circle. A part is taken not to cross the antimeridian itself
// (RFC 7946 section 3.1.9 asks for such parts to be split).
func BBox(g orb.Geometry) [4]float64 {
	b := g.Bound()
	var spans [][2]float64
	addParts(g, &spans)
	if len(spans) < 2 {
		return [4]float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	// Merge overlapping spans, then find the widest gap between neighbours;
	// the gap across the antimeridian runs from the last east to the first
	// west plus 360°.
	merged := spans[:1]
	for _, s := range spans[1:] {
		last := &merged[len(merged)-1]
		if s[0] <= last[1] {
			last[1] = max(last[1], s[1])
			continue
		}
		merged = append(merged, s)
	}
	wrapGap := merged[0][0] + 360 - merged[len(merged)-1][1]
	widest, at := wrapGap, -1
	for i := 1; i < len(merged); i++ {
		if gap := merged[i][0] - merged[i-1][1]; gap > widest {
			widest, at = gap, i
		}
	}
	if at < 0 {
		return [4]float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
	}
	return [4]float64{merged[at][0], b.Min[1], merged[at-1][1], b.Max[1]}
}

// addParts appends the longitude interval of each part of g.
func addParts(g orb.Geometry, spans *[][2]float64) {
	eachPart(g, func(p orb.Geometry) {
		b := p.Bound()
		*spans = append(*spans, [2]float64{b.Min[0], b.Max[0]})
	})
}

// eachPart calls fn with every single geometry of g, going into
// multi-geometries and collections: a point, a line or a polygon (any other
// geometry is a part of its own). A MultiPoint's points are given as
// MultiPoints of one that share its array, so that fn may move them.
func eachPart(g orb.Geometry, fn func(orb.Geometry)) {
	switch g := g.(type) {
	case orb.MultiPoint:
		for i := range g {
			fn(g[i : i+1])
		}
	case orb.MultiLineString:
		for _, l := range g {
			fn(l)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			fn(p)
		}
	case orb.Collection:
		for _, m := range g {
			eachPart(m, fn)
		}
	default:
		fn(g)
	}
}
