package api_test

import (
	"encoding/binary"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/engine/store"
)

func init() {
	// A tile is bytes to the contract check.
	openapi3filter.RegisterBodyDecoder(tiles.ContentType, openapi3filter.FileBodyDecoder)
}

// TestTileEndpoint: a tile of a collection with a point answers 200 with
// the point at its place, from a render the first time and from the cache
// after; a tile with nothing answers 204; another tenant's token, an
// unknown collection and a tile that does not exist are refused.
func TestTileEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a", "places")
	b.createCatalog("cat-b", "places")
	ft, err := b.store.ResolveFeatureTable(b.ctx, "cat-a", "places")
	require.NoError(t, err)
	id, _, err := store.NewID()
	require.NoError(t, err)
	wkb := []byte{1, 1, 0, 0, 0}
	wkb = binary.LittleEndian.AppendUint64(wkb, math.Float64bits(10))
	wkb = binary.LittleEndian.AppendUint64(wkb, math.Float64bits(10))
	_, _, err = b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{{GeoID: id, ExternalID: "a",
		WKB: wkb, Properties: []byte(`{"name":"ten"}`),
		Stats: []byte(`{}`), GeometryHash: "g", AttributesHash: "a", ValidFrom: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}})
	require.NoError(t, err)

	// (10°, 10°) is in tile 1/1/0 at x = 4096·10/180.
	path := "/catalogs/cat-a/collections/places/tiles/1/1/0.mvt"
	for range 2 {
		res := b.do("GET", path, tokClientLimited, nil)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		require.Equal(t, tiles.ContentType, res.header.Get("Content-Type"))
		layers, err := mvt.Unmarshal(res.body)
		require.NoError(t, err)
		require.Len(t, layers, 1)
		require.Equal(t, "places", layers[0].Name)
		require.Len(t, layers[0].Features, 1)
		f := layers[0].Features[0]
		require.Equal(t, "ten", f.Properties["name"])
		require.InDelta(t, 4096*10.0/180, f.Geometry.(orb.Point)[0], 1)
	}
	res := b.do("GET", "/catalogs/cat-a/collections/places/tiles/1/0/1.mvt", tokClientLimited, nil)
	require.Equal(t, http.StatusNoContent, res.status)
	require.Empty(t, res.body)

	for _, c := range []struct {
		path, token string
		status      int
	}{
		{path, tokClientB, http.StatusNotFound},
		{"/catalogs/cat-b/collections/places/tiles/1/1/0.mvt", tokClientLimited, http.StatusNotFound},
		{"/catalogs/cat-a/collections/nope/tiles/1/1/0.mvt", tokClientLimited, http.StatusNotFound},
		{"/catalogs/cat-a/collections/places/tiles/1/2/0.mvt", tokClientLimited, http.StatusBadRequest},
		{"/catalogs/cat-a/collections/places/tiles/23/0/0.mvt", tokClientLimited, http.StatusBadRequest},
		{"/catalogs/cat-a/collections/places/tiles/1/1/0.png", tokClientLimited, http.StatusBadRequest},
		{"/catalogs/cat-a/collections/places/tiles/1/+1/0.mvt", tokClientLimited, http.StatusBadRequest},
		{path, tokWorker, http.StatusForbidden},
		{path, "", http.StatusUnauthorized},
	} {
		res := b.do("GET", c.path, c.token, nil)
		require.Equal(t, c.status, res.status, "%s: %s", c.path, res.body)
	}
}
