package ingest_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
)

// postgisCollection: a valid polygon, a self-intersecting one (a bowtie),
// a MultiPolygon split at the antimeridian and a polygon with a hole.
const postgisCollection = `{"type": "FeatureCollection", "features": [
{"type": "Feature", "properties": {"code": "emilia"}, "geometry": {"type": "Polygon", "coordinates": [[[9.2, 43.7], [12.8, 43.7], [12.8, 45.1], [9.2, 45.1], [9.2, 43.7]]]}},
{"type": "Feature", "properties": {"code": "bowtie"}, "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]}},
{"type": "Feature", "properties": {"code": "fiji"}, "geometry": {"type": "MultiPolygon", "coordinates": [
  [[[177, -19], [180, -19], [180, -16], [177, -16], [177, -19]]],
  [[[-180, -18], [-179, -18], [-179, -16], [-180, -16], [-180, -18]]]]}},
{"type": "Feature", "properties": {"code": "ring"}, "geometry": {"type": "Polygon", "coordinates": [
  [[-60, -30], [-50, -30], [-50, -20], [-60, -20], [-60, -30]], [[-56, -26], [-56, -24], [-54, -24], [-54, -26], [-56, -26]]]}}
]}`

// TestPostGISValidityAreaAndBBox: PostGIS decides validity (the bowtie is
// refused with ST_IsValidReason's words and nothing of it is stored), the
// area in the envelope agrees with PostGIS's geography ST_Area, and the
// antimeridian feature's bbox has west > east.
func TestPostGISValidityAreaAndBBox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := writeFile(t, "postgis.geojson", postgisCollection)
	out, rep := b.ingestFile(t, map[string]any{"source": path, "format": "geojson", "id_attribute": "code"})
	require.EqualValues(t, 3, out.Features.Created)
	require.EqualValues(t, 1, out.Features.Rejected)

	envs := rep.byExternalID()
	bow := envs["bowtie"]
	require.Equal(t, reporters.RecordRejected, bow.Status)
	require.NotNil(t, bow.Message)
	require.Equal(t, "invalid geometry: Self-intersection[1 1]", *bow.Message)
	require.JSONEq(t, `{"type":"Polygon","coordinates":[[[0,0],[2,2],[2,0],[0,2],[0,0]]]}`, string(bow.Record.Geometry))
	var stored int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM s_cat.regions WHERE external_id = 'bowtie'`).Scan(&stored))
	require.Zero(t, stored)

	for _, id := range []string{"emilia", "fiji", "ring"} {
		var pgArea float64
		var valid bool
		require.NoError(t, b.pool.QueryRow(b.ctx,
			`SELECT ST_Area(geom::geography), ST_IsValid(geom) FROM s_cat.regions WHERE external_id = $1`, id).Scan(&pgArea, &valid))
		require.True(t, valid, id)
		got := number(t, envs[id].Record.Stats["area"])
		require.InDelta(t, 0, math.Abs(got-pgArea)/pgArea, 1e-5, "%s: wf %.1f m², PostGIS geography %.1f m²", id, got, pgArea)
	}

	bbox := func(id string) []float64 {
		var out []float64
		for _, v := range envs[id].Record.Stats["bbox"].([]any) {
			out = append(out, number(t, v))
		}
		return out
	}
	require.Equal(t, []float64{177, -19, -179, -16}, bbox("fiji"))
	require.Equal(t, []float64{9.2, 43.7, 12.8, 45.1}, bbox("emilia"))
}
