package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
)

// TestFeatureLoadEncodedRows: rows encoded for COPY by EncodeCopyRow and
// merged by a FeatureLoad read back exactly as rows that MergeFeatures
// encodes through pgx (every column, NULL and non-NULL asset ids, an odd
// validity start with microseconds, before 1970 too, non-ASCII
// attributes), with the geoid and transaction time of their merge; a load
// rolled back leaves nothing, and one committed shows every batch.
func TestFeatureLoadEncodedRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plain := registerCollection(t, b, "cat", "s_cat", "plain")
	encoded := registerCollection(t, b, "cat", "s_cat", "encoded")
	asset := "asset-1"
	starts := []time.Time{
		time.Date(2024, 2, 29, 13, 14, 15, 123456789, time.UTC),
		time.Date(1969, 7, 20, 20, 17, 40, 999999000, time.FixedZone("x", -5*3600)),
	}
	versions := func() []store.FeatureVersion {
		var vs []store.FeatureVersion
		for i, from := range starts {
			v := version(t, string(rune('a'+i)), float64(i)+0.5, "Zürich «x» 東京", from)
			if i == 0 {
				v.AssetID = &asset
			}
			v.Stats = []byte(`{"area": 1.5, "bbox": [1, 2, 3, 4]}`)
			vs = append(vs, v)
		}
		return vs
	}

	want := versions()
	_, wantTx, err := b.store.MergeFeatures(b.ctx, plain, want)
	require.NoError(t, err)

	// A rolled-back load writes nothing.
	load, err := b.store.BeginFeatureLoad(b.ctx, encoded)
	require.NoError(t, err)
	got := versions()
	for i := range got {
		got[i].GeoID = want[i].GeoID
		require.NoError(t, store.EncodeCopyRow(&got[i]))
	}
	_, _, err = load.Merge(b.ctx, got, nil)
	require.NoError(t, err)
	require.NoError(t, load.Rollback(b.ctx))
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM s_cat.encoded`).Scan(&n))
	require.Zero(t, n)

	// A committed one shows both of its batches, checked beforehand.
	load, err = b.store.BeginFeatureLoad(b.ctx, encoded)
	require.NoError(t, err)
	var gotTx []time.Time
	for i := range got {
		checked, err := b.store.CheckGeometries(b.ctx, got[i:i+1])
		require.NoError(t, err)
		require.Equal(t, []string{""}, checked)
		out, tx, err := load.Merge(b.ctx, got[i:i+1], checked)
		require.NoError(t, err)
		require.Equal(t, store.MergeCreated, out[0].Action)
		gotTx = append(gotTx, tx)
	}
	require.NoError(t, load.Commit(b.ctx))
	require.NoError(t, load.Rollback(b.ctx), "a rollback after the commit does nothing")

	rows := func(table string) []string {
		r, err := b.pool.Query(b.ctx, `
SELECT concat_ws(' | ', geoid, external_id, coalesce(asset_id, 'NULL'), ST_AsEWKT(geom), properties::text, stats::text,
                 geometry_hash, attributes_hash, validity::text, transaction_time)
FROM s_cat.`+table+` ORDER BY external_id`)
		require.NoError(t, err)
		var out []string
		for r.Next() {
			var s string
			require.NoError(t, r.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, r.Err())
		return out
	}
	var wantRows []string
	for i, row := range rows("plain") {
		wantRows = append(wantRows, row[:len(row)-len(txText(t, b, wantTx))]+txText(t, b, gotTx[i]))
	}
	require.Equal(t, wantRows, rows("encoded"))
	require.Len(t, wantRows, 2)
}

// txText is a transaction time as the server writes it in text.
func txText(t *testing.T, b *bundle, tt time.Time) string {
	t.Helper()
	var s string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT $1::timestamptz::text`, tt).Scan(&s))
	return s
}
