package ingest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/geom"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/migrations"
	"github.com/wfhq/wf/reporters"
)

// legacyFeatureTableDDL is the feature table as the code before migration
// 030 created it: the geometry twice, as GeoJSON (jsonb) and as PostGIS.
const legacyFeatureTableDDL = `
CREATE TABLE s_cat.legacy (
    geoid            uuid        NOT NULL,
    external_id      text        NOT NULL,
    asset_id         text,
    geometry         jsonb       NOT NULL,
    geom             geometry(Geometry, 4326) NOT NULL,
    properties       jsonb       NOT NULL DEFAULT '{}',
    stats            jsonb       NOT NULL DEFAULT '{}',
    geometry_hash    text        NOT NULL,
    attributes_hash  text        NOT NULL,
    validity         tstzrange   NOT NULL,
    transaction_time timestamptz NOT NULL DEFAULT now(),
    deleted_at       timestamptz,
    CONSTRAINT "_legacy_pk" PRIMARY KEY (external_id, transaction_time),
    CONSTRAINT "_legacy_validity" CHECK (NOT isempty(validity) AND NOT lower_inf(validity))
);
CREATE UNIQUE INDEX "_legacy_current" ON s_cat.legacy (external_id) WHERE upper_inf(validity) AND deleted_at IS NULL;
CREATE INDEX "_legacy_geoid" ON s_cat.legacy (geoid);
CREATE INDEX "_legacy_geom" ON s_cat.legacy USING gist (geom)`

// TestMigration030KeepsEveryVersion: a collection holding three versions of
// each feature in the layout before migration 030 (every row with its
// GeoJSON copy, as the old merge wrote it) is upgraded by the migration;
// every version then reads back as of its time with the GeoJSON text that
// was stored, number for number, and the same hashes, and ingesting the
// last source again writes nothing (the content hashes did not change).
func TestMigration030KeepsEveryVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 40
	starts := []time.Time{day, day.AddDate(0, 1, 0), day.AddDate(0, 2, 0)}
	sources := make([]string, len(starts))
	// stored[external id, transaction time] is the GeoJSON the old merge stored.
	type key struct {
		id string
		tt string
	}
	stored := map[key]string{}
	hashes := map[key][2]string{}
	for v, from := range starts {
		sources[v] = squares(t, n, func(i int) string {
			// Every version moves some features and renames others.
			return squareFeature(i, 0.1+0.01*float64(v*(i%2)), fmt.Sprintf("region %d v%d", i, v*(i%3)), "1000", false, false)
		})
		out, rep := b.ingestFile(t, map[string]any{"source": sources[v], "format": "ndjson", "id_attribute": "code",
			"validity_start": from.Format(time.RFC3339)})
		require.Zero(t, out.Features.Rejected)
		for _, env := range rep.envs {
			if env.Record.System["change"] == "unchanged" {
				continue
			}
			k := key{env.Record.System[reporters.SystemExternalID].(string), env.Record.System[reporters.SystemTransactionTime].(string)}
			stored[k] = string(env.Record.Geometry)
			hashes[k] = [2]string{env.Record.System[reporters.SystemGeometryHash].(string), env.Record.System[reporters.SystemAttributesHash].(string)}
		}
	}
	rows, _ := b.count(t)
	require.Equal(t, len(stored), rows)
	require.Greater(t, rows, 2*n, "several versions per feature")

	// The same rows in a table of the old layout, as the old code wrote them.
	_, err := b.store.CreateCollection(b.ctx, store.NewCollection{CatalogID: "cat", ID: "legacy"})
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, legacyFeatureTableDDL)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `INSERT INTO catalog.owned_tables (schema_name, table_name) VALUES ('s_cat', 'legacy')`)
	require.NoError(t, err)
	var ids, tts, texts []string
	for k, g := range stored {
		ids, tts, texts = append(ids, k.id), append(tts, k.tt), append(texts, g)
	}
	tag, err := b.pool.Exec(b.ctx, `
INSERT INTO s_cat.legacy (geoid, external_id, asset_id, geometry, geom, properties, stats,
                          geometry_hash, attributes_hash, validity, transaction_time, deleted_at)
SELECT r.geoid, r.external_id, r.asset_id, g.geometry::jsonb, r.geom, r.properties, r.stats,
       r.geometry_hash, r.attributes_hash, r.validity, r.transaction_time, r.deleted_at
FROM s_cat.regions r
JOIN unnest($1::text[], $2::timestamptz[], $3::text[]) AS g(external_id, transaction_time, geometry)
  ON g.external_id = r.external_id AND g.transaction_time = r.transaction_time`, ids, tts, texts)
	require.NoError(t, err)
	require.EqualValues(t, rows, tag.RowsAffected())

	sql, err := migrations.FS.ReadFile("030_features_geometry_once.sql")
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, string(sql))
	require.NoError(t, err)
	var copies int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM pg_attribute
WHERE attrelid = 's_cat.legacy'::regclass AND attname = 'geometry' AND NOT attisdropped`).Scan(&copies))
	require.Zero(t, copies, "the GeoJSON copy is gone")

	legacy, err := store.NewFeatureTable("s_cat", "legacy")
	require.NoError(t, err)
	seen := map[key]bool{}
	for _, from := range starts {
		at := from.Add(time.Hour)
		got, err := b.store.ScanFeatures(b.ctx, legacy, store.FeatureFilter{AsOf: &at}, func(r *store.FeatureRow) error {
			k := key{r.ExternalID, r.TransactionTime.Format(time.RFC3339Nano)}
			want, ok := stored[k]
			if !ok {
				return fmt.Errorf("version %v was not stored", k)
			}
			g, err := geom.GeoJSONFromWKB(nil, r.WKB)
			if err != nil {
				return err
			}
			if string(g) != want {
				return fmt.Errorf("version %v reads %s, was stored as %s", k, g, want)
			}
			if h := hashes[k]; r.GeometryHash != h[0] || r.AttributesHash != h[1] {
				return fmt.Errorf("version %v has other hashes", k)
			}
			if !strings.Contains(string(r.Properties), "region") {
				return fmt.Errorf("version %v lost its properties: %s", k, r.Properties)
			}
			seen[k] = true
			return nil
		})
		require.NoError(t, err)
		require.EqualValues(t, n, got)
	}
	require.Len(t, seen, len(stored), "every version read back as of its time")

	// The last source again, into the upgraded table: nothing changes.
	rep := &capture{}
	task := newTask(t, map[string]any{"source": sources[len(sources)-1], "format": "ndjson", "id_attribute": "code",
		"validity_start": starts[len(starts)-1].AddDate(0, 1, 0).Format(time.RFC3339)})
	task.Inputs = []byte(strings.Replace(string(task.Inputs), `"regions"`, `"legacy"`, 1))
	out, err := b.handler.Handle(b.ctx, task, rep)
	require.NoError(t, err)
	require.Contains(t, string(out), fmt.Sprintf(`"unchanged":%d`, n))
	var after int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM s_cat.legacy`).Scan(&after))
	require.Equal(t, rows, after)
}
