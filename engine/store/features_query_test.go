package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
)

// TestSummarizeFeatures: a table read whole (count, extent, validity
// bounds), the same table past the exact limit estimated from the
// planner's statistics (no count), and a table never made, empty.
func TestSummarizeFeatures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ft := registerCollection(t, b, "cat-s", "s_cat_s", "points")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _, err := b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{
		version(t, "a", 1, "x", t0), version(t, "b", 2, "x", t0), version(t, "c", 3, "x", t0)})
	require.NoError(t, err)

	sum, err := b.store.SummarizeFeatures(b.ctx, ft, 1000)
	require.NoError(t, err)
	require.Equal(t, store.FeatureSummary{Count: 3, BBox: []float64{1, 1, 3, 1}, First: &t0}, sum)

	_, err = b.pool.Exec(b.ctx, `ANALYZE s_cat_s.points`)
	require.NoError(t, err)
	sum, err = b.store.SummarizeFeatures(b.ctx, ft, 0)
	require.NoError(t, err)
	require.True(t, sum.Estimated)
	require.Equal(t, int64(-1), sum.Count)
	require.Len(t, sum.BBox, 4)
	require.InDelta(t, 1, sum.BBox[0], 0.01)
	require.InDelta(t, 3, sum.BBox[2], 0.01)

	none, err := store.NewFeatureTable("s_cat_s", "never")
	require.NoError(t, err)
	sum, err = b.store.SummarizeFeatures(b.ctx, none, 1000)
	require.NoError(t, err)
	require.Equal(t, store.FeatureSummary{}, sum)
}
