package ingest_test

import (
	"encoding/hex"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
)

// TestAdminRegions ingests testdata/admin_regions.geojson, six simplified
// administrative regions (three US states bounded by parallels and
// meridians, Sicily as the triangle of its capes, South Africa with Lesotho
// as a hole, Malta and Gozo as a MultiPolygon), and checks each feature's
// reported and stored stats against references computed independently:
//
//   - area: GeographicLib 2.1.2's Planimeter (Karney 2013, exact geodesic
//     polygons on WGS84), run on the fixture's rings (`Planimeter -p 10`,
//     one "lat lon" line per vertex; holes subtracted); for the three
//     states also the closed-form area between their parallels and
//     meridians (catalogtest.ZoneArea), which their densified edges follow.
//   - centroid: the planar area-weighted centroid in degrees, computed with
//     the shoelace formula outside wf (rounded to 6 decimals).
//   - bbox: the extreme coordinates of the fixture.
func TestAdminRegions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	out, rep := b.ingestFile(t, map[string]any{
		"source": "testdata/admin_regions.geojson", "format": "geojson", "id_attribute": "code",
		"asset_id": "ADMIN_2024", "validity_start": day.Format(time.RFC3339),
	})
	require.Equal(t, "s_cat.regions", out.Table)
	require.EqualValues(t, 6, out.Features.Read)
	require.EqualValues(t, 6, out.Features.Created)

	want := []struct {
		code      string
		area      float64 // GeographicLib, m²
		zone      float64 // closed form, m² (0: none)
		centroid  orb.Point
		bbox      []float64
		geometryT string
	}{
		{"US-CO", 269216574240.8, catalogtest.ZoneArea(-109.046667, 37, -102.046667, 41), orb.Point{-105.546667, 39.0}, []float64{-109.046667, 37, -102.046667, 41}, "Polygon"},
		{"US-WY", 253587744820.5, catalogtest.ZoneArea(-111.05, 41, -104.05, 45), orb.Point{-107.55, 43.0}, []float64{-111.05, 41, -104.05, 45}, "Polygon"},
		{"US-UT", 220117288619.5, catalogtest.ZoneArea(-114.05, 37, -109.05, 42) - catalogtest.ZoneArea(-111.05, 41, -109.05, 42), orb.Point{-111.680435, 39.326087}, []float64{-114.05, 37, -109.05, 42}, "Polygon"},
		{"IT-82", 23768032188.3, 0, orb.Point{14.406667, 37.586667}, []float64{12.43, 36.69, 15.65, 38.27}, "Polygon"},
		{"ZA", 1311205182256.7, 0, orb.Point{24.796705, -28.768240}, []float64{16.45, -34.83, 32.89, -22.19}, "Polygon"},
		{"MT", 128778812.4, 0, orb.Point{14.383230, 35.914034}, []float64{14.18, 35.8, 14.57, 36.07}, "MultiPolygon"},
	}
	got := rep.byExternalID()
	require.Len(t, got, len(want))
	hash := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, w := range want {
		env := got[w.code]
		require.Equal(t, reporters.RecordSuccess, env.Status, w.code)
		require.Nil(t, env.Message)
		area := number(t, env.Record.Stats["area"])
		e := math.Abs(area-w.area) / w.area
		t.Logf("%s: area %.1f m², GeographicLib %.1f m², error %.6f%%", w.code, area, w.area, 100*e)
		require.Less(t, e, 0.005, "%s: issue 7 asks for 0.5%%", w.code)
		require.Less(t, e, 1e-4, "%s: the authalic method is within 0.01%%", w.code)
		if w.zone > 0 {
			require.Less(t, math.Abs(area-w.zone)/w.zone, 1e-4, "%s against the closed form", w.code)
		}

		raw, err := hex.DecodeString(env.Record.Stats["centroid"].(string))
		require.NoError(t, err)
		c, err := wkb.Unmarshal(raw)
		require.NoError(t, err)
		require.InDelta(t, w.centroid[0], c.(orb.Point)[0], 1e-5, w.code)
		require.InDelta(t, w.centroid[1], c.(orb.Point)[1], 1e-5, w.code)
		var bbox []float64
		for _, v := range env.Record.Stats["bbox"].([]any) {
			bbox = append(bbox, number(t, v))
		}
		require.Equal(t, w.bbox, bbox, w.code)

		sys := env.Record.System
		geoid, err := uuid.Parse(sys[reporters.SystemGeoID].(string))
		require.NoError(t, err)
		require.True(t, store.IsV7(geoid))
		require.Equal(t, geoid.String(), env.Record.ID)
		require.Equal(t, "ADMIN_2024", sys[reporters.SystemAssetID])
		require.Equal(t, "[2024-01-01T00:00:00Z,)", sys[reporters.SystemValidity])
		require.Regexp(t, hash, sys[reporters.SystemGeometryHash])
		require.Regexp(t, hash, sys[reporters.SystemAttributesHash])
		tt, err := time.Parse(time.RFC3339Nano, sys[reporters.SystemTransactionTime].(string))
		require.NoError(t, err)
		require.WithinDuration(t, clock.Now(), tt, time.Minute)
		require.Equal(t, "created", sys["change"])
		require.Equal(t, w.code, env.Record.Properties["code"])
		require.Contains(t, string(env.Record.Geometry), `"type":"`+w.geometryT+`"`)

		// The stored row carries the same stats and identity.
		var storedArea float64
		var storedID uuid.UUID
		require.NoError(t, b.pool.QueryRow(b.ctx,
			`SELECT (stats->>'area')::float8, geoid FROM s_cat.regions WHERE external_id = $1`, w.code).Scan(&storedArea, &storedID))
		require.Equal(t, area, storedArea)
		require.Equal(t, geoid, storedID)
	}
}

// number reads a JSON number decoded as json.Number or float64.
func number(t *testing.T, v any) float64 {
	t.Helper()
	switch n := v.(type) {
	case float64:
		return n
	case interface{ Float64() (float64, error) }:
		f, err := n.Float64()
		require.NoError(t, err)
		return f
	}
	t.Fatalf("%v (%T) is not a number", v, v)
	return 0
}
