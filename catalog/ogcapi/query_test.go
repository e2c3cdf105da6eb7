package ogcapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/ogcapi"
	"github.com/wfhq/wf/engine/store"
)

// TestParseItems: the parameters that need no database (no crs but CRS84
// and EPSG:4326) become the store query they mean, and bad ones a
// ParamError naming them.
func TestParseItems(t *testing.T) {
	t.Parallel()
	r := ogcapi.New(nil)
	ctx := context.Background()
	q, err := r.ParseItems(ctx, ogcapi.ItemsParams{BBox: "170,-10,-170,10", Limit: "50000", Datetime: "2024-01-01/..", Properties: "a, b"})
	require.NoError(t, err)
	require.Equal(t, ogcapi.MaxLimit, q.Store.Limit, "a larger limit is served as the maximum")
	require.Equal(t, store.ExprOr{Args: []store.FeatureExpr{
		store.ExprEnvelope{X0: 170, Y0: -10, X1: 180, Y1: 10, SRID: 4326},
		store.ExprEnvelope{X0: -180, Y0: -10, X1: -170, Y1: 10, SRID: 4326},
	}}, q.Store.Filter, "across the antimeridian: two boxes")
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	require.True(t, q.Store.Interval)
	require.Equal(t, &from, q.Store.From)
	require.Nil(t, q.Store.To)
	require.Equal(t, []string{"a", "b"}, q.Store.Properties)
	require.Equal(t, ogcapi.CRS84, q.CRS)

	q, err = r.ParseItems(ctx, ogcapi.ItemsParams{BBox: "40,3,45,8", BBoxCRS: "EPSG:4326", CRS: "http://www.opengis.net/def/crs/EPSG/0/4326",
		Filter: "pop > 1", Datetime: "2024-06-01T12:00:00+02:00"})
	require.NoError(t, err)
	require.Equal(t, store.ExprAnd{Args: []store.FeatureExpr{
		store.ExprEnvelope{X0: 3, Y0: 40, X1: 8, Y1: 45, SRID: 4326},
		store.ExprCompare{Property: "pop", Op: ">", Value: 1.0},
	}}, q.Store.Filter, "EPSG:4326 is latitude first")
	require.True(t, q.Store.FlipAxes)
	require.True(t, q.Store.At.Equal(time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)))

	for _, c := range []struct {
		p     ogcapi.ItemsParams
		param string
	}{
		{ogcapi.ItemsParams{Limit: "0"}, "limit"},
		{ogcapi.ItemsParams{After: "x", Before: "y"}, "before"},
		{ogcapi.ItemsParams{After: "!!"}, "after"},
		{ogcapi.ItemsParams{BBox: "1,2,3"}, "bbox"},
		{ogcapi.ItemsParams{BBox: "1,NaN,3,4"}, "bbox"},
		{ogcapi.ItemsParams{BBox: "0,-91,1,1"}, "bbox"},
		{ogcapi.ItemsParams{BBoxCRS: "EPSG:4326"}, "bbox-crs"},
		{ogcapi.ItemsParams{Datetime: "soon"}, "datetime"},
		{ogcapi.ItemsParams{Datetime: "2025-01-01/2024-01-01"}, "datetime"},
		{ogcapi.ItemsParams{Properties: "a,,b"}, "properties"},
		{ogcapi.ItemsParams{CRS: "urn:x"}, "crs"},
		{ogcapi.ItemsParams{Filter: "a ="}, "filter"},
		{ogcapi.ItemsParams{Filter: "a = 1", FilterLang: "sql"}, "filter-lang"},
		{ogcapi.ItemsParams{FilterLang: "cql2-text"}, "filter"},
		{ogcapi.ItemsParams{Filter: "a = 1", FilterCRS: "EPSG:4326"}, "filter-crs"},
	} {
		_, err := r.ParseItems(ctx, c.p)
		var pe *ogcapi.ParamError
		require.True(t, errors.As(err, &pe), "%+v: %v", c.p, err)
		require.Equal(t, c.param, pe.Param, "%+v: %v", c.p, err)
	}

	// A cursor goes round.
	k := store.FeatureKey{ExternalID: "P1", TransactionTime: time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC)}
	q, err = r.ParseItems(ctx, ogcapi.ItemsParams{After: ogcapi.EncodeKey(k)})
	require.NoError(t, err)
	require.Equal(t, k.ExternalID, q.Store.After.ExternalID)
	require.True(t, k.TransactionTime.Equal(q.Store.After.TransactionTime))
}
