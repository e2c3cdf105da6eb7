package store_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestFeatureTablePostGIS: a feature table holds a PostGIS
// geometry(Geometry, 4326) column with a GiST index, filled from the WKB of
// each version; PostGIS decides validity, and an invalid geometry is
// refused with its reason and writes nothing.
func TestFeatureTablePostGIS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ft := registerCollection(t, b, "cat", "s_cat", "parcels")

	var typ, index string
	require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT format_type(a.atttypid, a.atttypmod),
       (SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
        WHERE i.indrelid = a.attrelid AND a.attnum = ANY(i.indkey))
FROM pg_attribute a WHERE a.attrelid = 's_cat.parcels'::regclass AND a.attname = 'geom'`).Scan(&typ, &index))
	require.Equal(t, "geometry(Geometry,4326)", typ)
	require.Contains(t, index, "USING gist (geom)")
	var legacy int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_attribute
WHERE attrelid = 's_cat.parcels'::regclass AND attname IN ('geometry_wkb', 'bbox') AND NOT attisdropped`).Scan(&legacy))
	require.Zero(t, legacy, "what PostGIS makes redundant is not there")

	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	square := version(t, "square", 0, "x", t0)
	square.WKB = ringWKB([][2]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}})
	bowtie := version(t, "bowtie", 0, "y", t0)
	bowtie.WKB = ringWKB([][2]float64{{0, 0}, {1, 1}, {1, 0}, {0, 1}, {0, 0}})
	out, _, err := b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{square, bowtie, version(t, "pt", 12.5, "z", t0)})
	require.NoError(t, err)
	require.Equal(t, store.MergeCreated, out[0].Action)
	require.Equal(t, store.MergeInvalid, out[1].Action)
	require.Equal(t, "Self-intersection[0.5 0.5]", out[1].Reason)
	require.Equal(t, store.MergeCreated, out[2].Action)

	rows, err := b.pool.Query(b.ctx, `SELECT external_id, ST_AsText(geom), ST_SRID(geom) FROM s_cat.parcels ORDER BY external_id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var id, wkt string
		var srid int
		err := r.Scan(&id, &wkt, &srid)
		return id + " " + wkt + " " + string(rune('0'+srid/1000)), err
	})
	require.NoError(t, err)
	require.Equal(t, []string{"pt POINT(12.5 1) 4", "square POLYGON((0 0,1 0,1 1,0 1,0 0)) 4"}, got)
}

// ringWKB returns the little-endian WKB of a polygon with one ring.
func ringWKB(ring [][2]float64) []byte {
	b := []byte{1, 3, 0, 0, 0, 1, 0, 0, 0, byte(len(ring)), 0, 0, 0}
	for _, p := range ring {
		b = append(b, pointWKB(p[0], p[1])[5:]...)
	}
	return b
}

// TestFeatureTableUpgrade: a table made before PostGIS (WKB bytea and a
// planar box) gets its geom column from the WKB and loses the redundant
// columns, keeping its rows and versions.
func TestFeatureTableUpgrade(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ft := registerCollection(t, b, "cat", "s_cat", "old")
	_, err := b.pool.Exec(b.ctx, `
DROP TABLE s_cat.old;
CREATE TABLE s_cat.old (
    geoid uuid NOT NULL, external_id text NOT NULL, asset_id text, geometry jsonb NOT NULL,
    geometry_wkb bytea NOT NULL, bbox box NOT NULL, properties jsonb NOT NULL DEFAULT '{}',
    stats jsonb NOT NULL DEFAULT '{}', geometry_hash text NOT NULL, attributes_hash text NOT NULL,
    validity tstzrange NOT NULL, transaction_time timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz,
    CONSTRAINT "_old_pk" PRIMARY KEY (external_id, transaction_time));
CREATE INDEX "_old_bbox" ON s_cat.old USING gist (bbox)`)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `
INSERT INTO s_cat.old (geoid, external_id, geometry, geometry_wkb, bbox, geometry_hash, attributes_hash, validity)
VALUES (gen_random_uuid(), 'a', '{}', $1, box(point(3,4), point(3,4)), 'g', 'a', tstzrange('2024-01-01', NULL))`,
		pointWKB(3, 4))
	require.NoError(t, err)

	require.NoError(t, b.store.CreateFeatureTable(b.ctx, ft))
	var wkt string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT ST_AsText(geom) FROM s_cat.old`).Scan(&wkt))
	require.Equal(t, "POINT(3 4)", wkt)
	var cols int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_attribute
WHERE attrelid = 's_cat.old'::regclass AND attname IN ('geometry_wkb', 'bbox') AND NOT attisdropped`).Scan(&cols))
	require.Zero(t, cols)
	require.NoError(t, b.store.CreateFeatureTable(b.ctx, ft), "idempotent after the upgrade")
	out, _, err := b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "a", 3, "x", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))})
	require.NoError(t, err)
	require.Equal(t, store.MergeVersioned, out[0].Action)
}

// TestPostGISMissingSaysWhatToDo: a role that may not create the extension
// gets a message naming the statement to run, and the queue's tables work
// without PostGIS.
func TestPostGISMissingSaysWhatToDo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw := dbtest.NewEmptyDatabase(t)
	role := "wf_nopostgis_" + clock.Now().UTC().Format("150405000000")
	_, err := b.pool.Exec(b.ctx, `CREATE ROLE `+role+` LOGIN PASSWORD 'pw-0001'`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = b.pool.Exec(b.ctx, `DROP ROLE IF EXISTS `+role)
	})
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.User = url.UserPassword(role, "pw-0001")
	conn, err := pgx.Connect(b.ctx, u.String())
	require.NoError(t, err)
	defer conn.Close(b.ctx)

	err = store.New(conn).EnsurePostGIS(b.ctx)
	require.ErrorIs(t, err, store.ErrNoPostGIS)
	require.ErrorContains(t, err, "CREATE EXTENSION postgis")
	require.NoError(t, store.EnsurePostGISOn(b.ctx, conn), "bootstrap code goes on without it")
}

// TestBulkLoadBuildsIndexesAfter: a load into an empty table drops its GiST
// and geoid indexes and EndBulkLoad builds them again; a table with rows
// keeps them; CreateFeatureTable builds them too (after a crash between).
func TestBulkLoadBuildsIndexesAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ft := registerCollection(t, b, "cat", "s_cat", "bulk")
	indexes := func() []string {
		return dbtest.Strings(t, b.ctx, b.pool, `SELECT indexname::text FROM pg_indexes
WHERE schemaname = 's_cat' AND tablename = 'bulk' ORDER BY 1`)
	}
	all := []string{"_bulk_current", "_bulk_geoid", "_bulk_geom", "_bulk_pk"}
	require.Equal(t, all, indexes())

	bulk, err := b.store.BeginBulkLoad(b.ctx, ft)
	require.NoError(t, err)
	require.True(t, bulk)
	require.Equal(t, []string{"_bulk_current", "_bulk_pk"}, indexes())
	out, _, err := b.store.MergeFeatures(b.ctx, ft, []store.FeatureVersion{version(t, "a", 1, "x", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))})
	require.NoError(t, err)
	require.Equal(t, store.MergeCreated, out[0].Action)
	require.NoError(t, b.store.EndBulkLoad(b.ctx, ft))
	require.Equal(t, all, indexes())

	bulk, err = b.store.BeginBulkLoad(b.ctx, ft)
	require.NoError(t, err)
	require.False(t, bulk, "a table with rows is loaded as it is")
	require.Equal(t, all, indexes())

	empty := registerCollection(t, b, "cat", "s_cat", "crashed")
	bulk, err = b.store.BeginBulkLoad(b.ctx, empty)
	require.NoError(t, err)
	require.True(t, bulk)
	require.NoError(t, b.store.CreateFeatureTable(b.ctx, empty))
	require.Len(t, dbtest.Strings(t, b.ctx, b.pool, `SELECT indexname::text FROM pg_indexes
WHERE schemaname = 's_cat' AND tablename = 'crashed'`), 4)
}
