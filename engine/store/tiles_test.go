package store_test

import (
	"math"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"

	"github.com/stretchr/testify/require"
	"github.com/wfhq/wf/engine/store"
)

// TestFeaturesVersion: the version changes with every write that changes
// rows, not with one that changes nothing, and a table made again never
// reuses one.
func TestFeaturesVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ft := registerCollection(t, b, "cat", "s_cat", "pts")
	v0, err := b.store.FeaturesVersion(b.ctx, ft)
	require.NoError(t, err)
	require.Empty(t, v0, "never written")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _, err = b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "a", 1, "x", t0)})
	require.NoError(t, err)
	v1, err := b.store.FeaturesVersion(b.ctx, ft)
	require.NoError(t, err)
	require.NotEmpty(t, v1)
	_, _, err = b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "a", 1, "x", t0.Add(time.Hour))})
	require.NoError(t, err)
	same, err := b.store.FeaturesVersion(b.ctx, ft)
	require.NoError(t, err)
	require.Equal(t, v1, same, "an unchanged merge keeps the version")
	_, _, err = b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "a", 2, "x", t0.Add(time.Hour))})
	require.NoError(t, err)
	v2, err := b.store.FeaturesVersion(b.ctx, ft)
	require.NoError(t, err)
	require.NotEqual(t, v1, v2)

	ext, err := b.store.FeaturesExtent(b.ctx, ft)
	require.NoError(t, err)
	require.Equal(t, []float64{2, 1, 2, 1}, ext, "the current version only")
}

// TestRenderTile: a point lands in the tile that holds it, at its pixel;
// other tiles are empty.
func TestRenderTile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ft := registerCollection(t, b, "cat", "s_cat", "pts")
	empty, err := b.store.RenderTile(b.ctx, ft, "pts", 0, 0, 0)
	require.NoError(t, err)
	require.Empty(t, empty)
	v := version(t, "a", 10, "x", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	v.WKB = pointWKB(10, 10)
	_, _, err = b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{v})
	require.NoError(t, err)
	// (10°, 10°) at z1 is in tile 1/1/0 (east, north), farther than the
	// buffer from its edges: x = 4096·10/180, y = 4096·(1 − ln tan(45° + 5°)/π).
	tile, err := b.store.RenderTile(b.ctx, ft, "pts", 1, 1, 0)
	require.NoError(t, err)
	layers, err := mvt.Unmarshal(tile)
	require.NoError(t, err)
	require.Len(t, layers, 1)
	require.Equal(t, "pts", layers[0].Name)
	require.Len(t, layers[0].Features, 1)
	f := layers[0].Features[0]
	require.Equal(t, "a", f.Properties["external_id"])
	require.Equal(t, "x", f.Properties["a"])
	p, ok := f.Geometry.(orb.Point)
	require.True(t, ok, "%T", f.Geometry)
	require.InDelta(t, 4096*10.0/180, p[0], 0.5)
	require.InDelta(t, 4096*(1-math.Log(math.Tan(50*math.Pi/180))/math.Pi), p[1], 0.5)
	for _, other := range [][2]int{{0, 0}, {0, 1}, {1, 1}} {
		tile, err := b.store.RenderTile(b.ctx, ft, "pts", 1, other[0], other[1])
		require.NoError(t, err)
		require.Empty(t, tile, "tile 1/%d/%d", other[0], other[1])
	}
}
