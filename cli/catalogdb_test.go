package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestCatalogInItsOwnDatabase runs wf with catalog.database_url on a second
// real database: `wf migrate up` gives each database its own schema, the
// registry's events reach the queue's outbox through the catalog's, and an
// ingestion run by `wf run` writes its features to the catalog's database
// only, whose asset event starts a gdal task in the queue that describes the
// asset in the catalog's database. The queue's database holds no catalog
// table and no feature table.
func TestCatalogInItsOwnDatabase(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, nil)
	queueURL, catalogURL := dbtest.NewEmptyDatabase(t), dbtest.NewEmptyDatabase(t)
	repoSpecs, err := filepath.Abs("../specs")
	require.NoError(t, err)
	cfg := fmt.Sprintf("database_url: %q\ncatalog: {database_url: %q}\ndata_dir: %q\nspecs: [%q]\nlog_format: json\nlog_level: warn\n",
		queueURL, catalogURL, e.data, repoSpecs)
	require.NoError(t, os.WriteFile(e.config, []byte(cfg), 0o600))
	queue, catalog := dbtest.PoolFor(t, queueURL), dbtest.PoolFor(t, catalogURL)
	ctx := t.Context()
	scalar := func(db *pgxpool.Pool, q string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, db.QueryRow(ctx, q, args...).Scan(&n), q)
		return n
	}

	// Each database gets its part of every migration, both at the latest version.
	code, out, errOut := e.run("migrate", "up")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "migrated to version")
	require.Contains(t, out, "catalog database (catalog.database_url) at version")
	schemas := `SELECT count(*) FROM pg_namespace WHERE nspname = $1`
	require.Equal(t, 1, scalar(queue, schemas, "tasks"))
	require.Equal(t, 0, scalar(queue, schemas, "catalog"))
	require.Equal(t, 1, scalar(catalog, schemas, "catalog"))
	require.Equal(t, 0, scalar(catalog, schemas, "tasks"))
	code, out, errOut = e.run("migrate", "status")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, 2, strings.Count(out, "pending:         none"), out)
	// The catalog's database is PostGIS's (the operator installs it, as for one database).
	_, err = catalog.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS postgis")
	require.NoError(t, err)

	// The registry writes in the catalog's database; its events reach the
	// queue's outbox (relayed after the write committed) and leave nothing
	// behind in the catalog's.
	code, _, errOut = e.run("catalogs", "create", "acme")
	require.Equal(t, ExitOK, code, errOut)
	code, _, errOut = e.run("catalogs", "collections", "add", "acme", "roads")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, 1, scalar(catalog, `SELECT count(*) FROM catalog.collections WHERE catalog_id = 'acme'`))
	require.Equal(t, 1, scalar(queue, `SELECT count(*) FROM tasks.events WHERE event_type = 'catalog.created' AND schema_name = 's_acme'`))
	require.Equal(t, 1, scalar(queue, `SELECT count(*) FROM tasks.events WHERE event_type = 'collection.created' AND schema_name = 's_acme'`))
	require.Equal(t, 0, scalar(catalog, `SELECT count(*) FROM catalog.outbox`))

	// An ingestion through wf run.
	dir := filepath.Join(e.data, "files", "s_acme")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	src := filepath.Join(dir, "roads.geojson")
	require.NoError(t, os.WriteFile(src, []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"id":"r1","name":"A"},"geometry":{"type":"LineString","coordinates":[[0,0],[1,1]]}},
{"type":"Feature","properties":{"id":"r2","name":"B"},"geometry":{"type":"LineString","coordinates":[[1,1],[2,0]]}},
{"type":"Feature","properties":{"id":"r3","name":"C"},"geometry":{"type":"Point","coordinates":[3,3]}}]}`), 0o644))
	e.engine()
	inputs, err := json.Marshal(map[string]any{"source": src, "format": "geojson", "id_attribute": "id",
		"asset_id": "roads-1", "catalog_id": "acme", "collection_id": "roads"})
	require.NoError(t, err)
	inputsFile := filepath.Join(t.TempDir(), "inputs.json")
	require.NoError(t, os.WriteFile(inputsFile, inputs, 0o600))
	task := e.waitEnded(e.runID("task_id", "enqueue", "--schema-name", "s_acme", "--format", "json", "--json", inputsFile, "ingestion"))
	require.Equal(t, wftype.StatusCompleted, task.Status, "%s", deref(task.Error))

	// The features are in the catalog's database, in the tenant's schema
	// (s_acme, derived from the catalog's id).
	require.Equal(t, 3, scalar(catalog, `SELECT count(*) FROM s_acme.roads`))
	require.Equal(t, 1, scalar(catalog, `SELECT count(*) FROM catalog.assets WHERE catalog_id = 'acme' AND asset_id = 'roads-1'`))
	// The queue's database has none of it: no catalog schema, no tenant
	// schema, no table outside tasks but tern's version table.
	require.Equal(t, 0, scalar(queue, schemas, "s_acme"))
	require.Equal(t, 0, scalar(queue, `
SELECT count(*) FROM pg_tables
WHERE schemaname NOT IN ('tasks', 'pg_catalog', 'information_schema')
  AND format('%I.%I', schemaname, tablename) <> 'public.wf_schema_version'`))

	// The ingestion's asset.created crossed through the outbox and started
	// gdal (describe-new-assets), which described the asset in the catalog's
	// database; its asset.updated was relayed too.
	deadline := time.Now().Add(2 * time.Minute)
	for scalar(queue, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'gdal' AND status = 'COMPLETED' AND inputs->>'asset_id' = 'roads-1'`) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no gdal task completed for the ingested asset")
		}
		time.Sleep(100 * time.Millisecond) // wall time: a real wf run works on it
	}
	require.Equal(t, 1, scalar(catalog, `SELECT count(*) FROM catalog.assets WHERE asset_id = 'roads-1' AND metadata ? 'gdal'`))
	require.Eventually(t, func() bool { return scalar(catalog, `SELECT count(*) FROM catalog.outbox`) == 0 },
		time.Minute, 50*time.Millisecond, "events left in the catalog's outbox")
}

// TestCatalogDatabaseBehindPgBouncerSessionModeWithJITInURL: a
// catalog.database_url that sets jit (and options) and goes through a
// session-mode PgBouncer, which refuses those startup parameters. Its pool
// moved them to SETs, but its schema check and migrations connect on their
// own (connectSetting), and failed at start with "unsupported startup
// parameter: jit". Now they move them too: `wf migrate up` migrates the
// catalog's database through the bouncer, and `wf migrate status` and
// `wf catalogs list` (which check its schema) work.
func TestCatalogDatabaseBehindPgBouncerSessionModeWithJITInURL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	e := newWFEnv(t, nil)
	queueURL, catalogURL := dbtest.NewEmptyDatabase(t), dbtest.NewEmptyDatabase(t)
	// Session mode: one server session per client (the catalog's pool and
	// the schema check's connection at once).
	bounced := dbtest.PgBouncerSized(t, catalogURL, "session", 6)
	join := "?"
	if strings.Contains(bounced, "?") {
		join = "&"
	}
	bounced += join + "jit=off&options=-c%20work_mem%3D8MB"
	cfg := fmt.Sprintf("database_url: %q\ncatalog: {database_url: %q}\ndata_dir: %q\nspecs: [%q]\nlog_format: json\nlog_level: warn\n",
		queueURL, bounced, e.data, e.specs)
	require.NoError(t, os.WriteFile(e.config, []byte(cfg), 0o600))

	code, out, errOut := e.run("migrate", "up")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "catalog database (catalog.database_url) at version")
	var n int
	require.NoError(t, dbtest.PoolFor(t, catalogURL).QueryRow(t.Context(),
		`SELECT count(*) FROM pg_namespace WHERE nspname = 'catalog'`).Scan(&n))
	require.Equal(t, 1, n, "the catalog's schema is in the catalog's database")
	code, out, errOut = e.run("migrate", "status")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, 2, strings.Count(out, "pending:         none"), out)
	code, _, errOut = e.run("catalogs", "list")
	require.Equal(t, ExitOK, code, errOut)
}
