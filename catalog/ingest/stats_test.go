package ingest_test

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/golang/geo/s2"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/stretchr/testify/require"
)

// statsCollection: a line, a polygon with a hole, a multipoint and a
// MultiPolygon split at the antimeridian, with attributes of several
// types and nulls.
const statsCollection = `{"type": "FeatureCollection", "features": [
{"type": "Feature", "properties": {"code": "road", "lanes": 2, "name": null}, "geometry": {"type": "LineString", "coordinates": [[9, 45], [10, 45.5], [11, 45]]}},
{"type": "Feature", "properties": {"code": "ring", "lanes": null, "tags": ["a"]}, "geometry": {"type": "Polygon", "coordinates": [
  [[-60, -30], [-50, -30], [-50, -20], [-60, -20], [-60, -30]], [[-56, -26], [-56, -24], [-54, -24], [-54, -26], [-56, -26]]]}},
{"type": "Feature", "properties": {"code": "wells", "lanes": "n/a"}, "geometry": {"type": "MultiPoint", "coordinates": [[1, 1], [2, 2], [3, 3]]}},
{"type": "Feature", "properties": {"code": "fiji", "name": "Fiji"}, "geometry": {"type": "MultiPolygon", "coordinates": [
  [[[177, -19], [180, -19], [180, -16], [177, -16], [177, -19]]],
  [[[-180, -18], [-179, -18], [-179, -16], [-180, -16], [-180, -18]]]]}}
]}`

// TestRecordStats: each record's stats hold the seed's four groups, and
// the geometry stats agree with PostGIS (geography ST_Length and
// ST_Perimeter, ST_NPoints, ST_NumGeometries); the S2 cell holds the
// centroid; the antimeridian MultiPolygon's centroid lies near Fiji; the
// outputs summarise the collection.
func TestRecordStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := writeFile(t, "stats.geojson", statsCollection)
	out, rep := b.ingestFile(t, map[string]any{"source": path, "format": "geojson", "id_attribute": "code", "s2_level": 10})
	require.EqualValues(t, 4, out.Features.Created)
	envs := rep.byExternalID()
	for _, id := range []string{"road", "ring", "wells", "fiji"} {
		st := envs[id].Record.Stats
		var pgLength, pgPerimeter float64
		var npoints, parts int
		var hash, attrs string
		require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT ST_Length(geom::geography), ST_Perimeter(geom::geography), ST_NPoints(geom), ST_NumGeometries(geom),
       geometry_hash, attributes_hash
FROM s_cat.regions WHERE external_id = $1`, id).Scan(&pgLength, &pgPerimeter, &npoints, &parts, &hash, &attrs))
		want := pgLength + pgPerimeter
		got := number(t, st["length"])
		if want == 0 {
			require.Zero(t, got, id)
		} else {
			require.InDelta(t, 0, math.Abs(got-want)/want, 1e-7, "%s: wf %.3f m, PostGIS geography %.3f m", id, got, want)
		}
		require.EqualValues(t, npoints, number(t, st["vertex_count"]), id)
		require.EqualValues(t, parts, number(t, st["part_count"]), id)
		require.Equal(t, hash, st["geometry_hash"], id)
		require.Equal(t, attrs, st["attributes_hash"], id)
		require.EqualValues(t, 10, number(t, st["s2_level"]), id)

		raw, err := hex.DecodeString(st["centroid"].(string))
		require.NoError(t, err)
		g, err := wkb.Unmarshal(raw)
		require.NoError(t, err)
		c := g.(orb.Point)
		cell := s2.CellIDFromToken(st["s2_cell"].(string))
		require.Equal(t, 10, cell.Level(), id)
		require.True(t, cell.Contains(s2.CellIDFromLatLng(s2.LatLngFromDegrees(c[1], c[0]))), "%s: the cell holds the centroid", id)
	}
	require.EqualValues(t, 3, number(t, envs["road"].Record.Stats["field_count"]))
	require.EqualValues(t, 1, number(t, envs["road"].Record.Stats["null_count"]))
	require.EqualValues(t, 0, number(t, envs["wells"].Record.Stats["null_count"]))

	raw, err := hex.DecodeString(envs["fiji"].Record.Stats["centroid"].(string))
	require.NoError(t, err)
	g, err := wkb.Unmarshal(raw)
	require.NoError(t, err)
	c := g.(orb.Point)
	require.True(t, c[0] > 177 || c[0] < -179, "Fiji's centroid %v lies in Fiji, not across the world", c)
	require.InDelta(t, -17.6, c[1], 0.2)

	s := out.Summary
	require.EqualValues(t, 4, s.Count)
	require.Equal(t, []float64{-180, -30, 180, 45.5}, s.Extent)
	require.Equal(t, []string{"string"}, s.Fields["code"].Types)
	require.Zero(t, s.Fields["code"].Nulls)
	require.Equal(t, []string{"number", "string"}, s.Fields["lanes"].Types)
	require.EqualValues(t, 2, s.Fields["lanes"].Nulls, "null in ring, absent in fiji")
	require.Equal(t, []string{"string"}, s.Fields["name"].Types)
	require.EqualValues(t, 3, s.Fields["name"].Nulls)
	require.Equal(t, []string{"array"}, s.Fields["tags"].Types)
	require.EqualValues(t, 3, s.Fields["tags"].Nulls)

	// Stored rows carry the same stats.
	var storedCell string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT stats->>'s2_cell' FROM s_cat.regions WHERE external_id = 'road'`).Scan(&storedCell))
	require.Equal(t, envs["road"].Record.Stats["s2_cell"], storedCell)
}
