package api_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/catalogtest"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/internal/bqfake"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestWarehouseJoinEndToEnd runs dwh_join from the shipped spec
// (specs/warehouse.yaml) through the engine: features ingested over HTTP,
// joins submitted with POST /tasks by a catalog-limited client and run by
// the dispatcher, against a PostgreSQL warehouse (a database of its own,
// for real) and BigQuery (the real client on internal/bqfake). It checks
// the outputs, the per-record counts in the progress and the exported
// files, then the tenancy: a client cannot join another tenant's
// collection, nor read through a connection or a table not allowed to its
// catalog; each such task fails and writes nothing.
func TestWarehouseJoinEndToEnd(t *testing.T) {
	t.Parallel()
	// The PostgreSQL warehouse: another database, reached by its URL.
	dwh := dbtest.NewPool(t)
	ctx := t.Context()
	_, err := dwh.Exec(ctx, `CREATE SCHEMA dwh;
		CREATE TABLE dwh.owners (pid bigint, code text, owner text, share float8);
		INSERT INTO dwh.owners VALUES (1, 'a', 'Ada', 10.5), (1, 'a', 'Alan', 11), (2, 'b', 'Bob', NULL), (9, 'z', 'Eve', 3);
		CREATE TABLE dwh.secret (pid bigint, salary int);
		INSERT INTO dwh.secret VALUES (1, 100000)`)
	require.NoError(t, err)
	bq := bqfake.New()
	t.Cleanup(bq.Close)
	bq.AddTable("proj", "sales", "owners", []bqfake.Field{{Name: "pid", Type: "INTEGER"}, {Name: "code", Type: "STRING"},
		{Name: "owner", Type: "STRING"}, {Name: "share", Type: "FLOAT"}},
		[][]any{{int64(1), "a", "Ada", 10.5}, {int64(1), "a", "Alan", 11.0}, {int64(2), "b", "Bob", nil}, {int64(9), "z", "Eve", 3.0}})
	bq.SetPageSize(2)

	b := setup(t, options{warehouses: []config.WarehouseConnection{
		{Name: "pg", Type: config.WarehousePostgres, URL: dwh.Config().ConnString(), Catalogs: []string{"cat-a"}, Tables: []string{"dwh.owners"}},
		{Name: "bq", Type: config.WarehouseBigQuery, Project: "proj", Endpoint: bq.URL, Catalogs: []string{"cat-a", "cat-b"}, Tables: []string{"sales.*"}},
	}})
	startFeatureEngine(t, b, t.TempDir())
	b.createCatalog("cat-a", "parcels")
	b.createCatalog("cat-b", "parcels")
	rootA, rootB := b.tenantDir("s_cat_a"), b.tenantDir("s_cat_b")

	// Four parcels: pid 1 (two owners), 2, 3 (no owner) and one without a pid.
	var parcels []string
	for i, props := range []string{`"id":"P1","pid":1,"code":"a"`, `"id":"P2","pid":2,"code":"b"`, `"id":"P3","pid":3,"code":"c"`, `"id":"P4","code":"d"`} {
		x := float64(i)
		geom, _ := json.Marshal([][][]float64{{{x, 45}, {x + 0.5, 45}, {x + 0.5, 45.5}, {x, 45.5}, {x, 45}}})
		parcels = append(parcels, `{"type":"Feature","properties":{`+props+`},"geometry":{"type":"Polygon","coordinates":`+string(geom)+`}}`)
	}
	require.NoError(t, os.WriteFile(filepath.Join(rootA, "parcels.ndjson"), []byte(strings.Join(parcels, "\n")+"\n"), 0o644))
	res := b.do("POST", "/ingestion/cat-a/parcels", tokClientLimited, map[string]any{
		"source": "parcels.ndjson", "format": "ndjson", "id_attribute": "id", "asset_id": "PARCELS"})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)

	join := func(token, schema string, inputs map[string]any) map[string]any {
		t.Helper()
		res := b.do("POST", "/tasks", token, map[string]any{"task_type": "dwh_join", "schema_name": schema, "inputs": inputs})
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
		return b.follow(res.json(t)["status_url"].(string), token)
	}

	// PostgreSQL, inner join on the integer key, every unmatched key listed.
	task = join(tokClientLimited, "s_cat_a", map[string]any{"catalog_id": "cat-a", "collection_id": "parcels",
		"connection": "pg", "table": "dwh.owners", "key": "pid", "destination": "joined.ndjson",
		"unmatched_destination": "unmatched.ndjson"})
	require.Equal(t, "COMPLETED", task["status"], task)
	out := task["outputs"].(map[string]any)
	for k, want := range map[string]float64{"features": 4, "matched": 2, "written": 3, "unmatched": 1, "rejected": 1,
		"rows": 4, "unmatched_warehouse_keys": 1} {
		require.Equal(t, want, out[k], "%s in %v", k, out)
	}
	require.Equal(t, map[string]any{"features": []any{"3"}, "warehouse": []any{"9"}}, out["unmatched_sample"])
	progress := task["progress"].(map[string]any)
	require.Equal(t, 4.0, progress["total"], "one envelope per feature: %v", progress)
	require.Equal(t, 2.0, progress["succeeded"], progress)
	require.Equal(t, 2.0, progress["rejected"], "P3 has no row (inner join), P4 no key: %v", progress)
	owners := map[string][]any{}
	for _, f := range catalogtest.ReadNDJSONFile[map[string]any](t, filepath.Join(rootA, "joined.ndjson")) {
		p := f["properties"].(map[string]any)
		owners[p["id"].(string)] = append(owners[p["id"].(string)], p["owner"])
		require.Equal(t, "Polygon", f["geometry"].(map[string]any)["type"])
	}
	require.Equal(t, map[string][]any{"P1": {"Ada", "Alan"}, "P2": {"Bob"}}, owners)
	require.Equal(t, []map[string]any{{"side": "features", "key": "3"}, {"side": "warehouse", "key": "9"}},
		catalogtest.ReadNDJSONFile[map[string]any](t, filepath.Join(rootA, "unmatched.ndjson")))

	// BigQuery, left join on the string key, CSV, paged results.
	task = join(tokClientLimited, "s_cat_a", map[string]any{"catalog_id": "cat-a", "collection_id": "parcels",
		"connection": "bq", "table": "sales.owners", "key": "code", "join": "left", "columns": []string{"owner"},
		"prefix": "dwh_", "format": "csv", "destination": "joined.csv"})
	require.Equal(t, "COMPLETED", task["status"], task)
	out = task["outputs"].(map[string]any)
	require.Equal(t, 5.0, out["written"], "P1 twice, P2, and P3, P4 without a row: %v", out)
	f, err := os.Open(filepath.Join(rootA, "joined.csv"))
	require.NoError(t, err)
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"geoid", "external_id", "wkt", "dwh_owner", "properties"}, records[0])
	byID := map[string][]string{}
	for _, r := range records[1:] {
		byID[r[1]] = append(byID[r[1]], r[3])
	}
	require.Equal(t, map[string][]string{"P1": {"Ada", "Alan"}, "P2": {"Bob"}, "P3": {""}, "P4": {""}}, byID)
	// The rows came in pages of 2: the first with jobs.query, the second
	// through jobs.getQueryResults.
	require.Equal(t, 1, bq.Requests("jobs.query"))
	require.Equal(t, 1, bq.Requests("jobs.getQueryResults"), "the rows came in pages")

	// Tenancy. Catalog cat-b's client cannot name cat-a's schema at all.
	// (A refusal creates no task; the outbox is not compared, as the
	// running engine consumes the events of the tasks above meanwhile.)
	joins := func() (n int) {
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'dwh_join'`).Scan(&n))
		return n
	}
	before := joins()
	{
		res := b.do("POST", "/tasks", tokClientB, map[string]any{"task_type": "dwh_join", "schema_name": "s_cat_a",
			"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "parcels", "connection": "bq",
				"table": "sales.owners", "key": "pid", "destination": "stolen.ndjson"}})
		require.Equal(t, http.StatusNotFound, res.status, string(res.body))
		require.Equal(t, before, joins(), "a refused submission creates no task")
	}
	// Its own tenant's task naming cat-a's collection fails when it runs.
	task = join(tokClientB, "s_cat_b", map[string]any{"catalog_id": "cat-a", "collection_id": "parcels",
		"connection": "bq", "table": "sales.owners", "key": "pid", "destination": "stolen.ndjson"})
	require.Equal(t, "FAILED", task["status"], task)
	require.Contains(t, task["error"], `the task belongs to tenant "s_cat_b"`)
	// A connection allowed to cat-a only.
	task = join(tokClientB, "s_cat_b", map[string]any{"catalog_id": "cat-b", "collection_id": "parcels",
		"connection": "pg", "table": "dwh.owners", "key": "pid", "destination": "theirs.ndjson"})
	require.Equal(t, "FAILED", task["status"], task)
	require.Contains(t, task["error"], `catalog cat-b may not read dwh.owners through connection "pg" (warehouse.connections allows it only bq, with the tables listed there)`)
	// A table of an allowed connection that is not listed for it.
	task = join(tokClientLimited, "s_cat_a", map[string]any{"catalog_id": "cat-a", "collection_id": "parcels",
		"connection": "pg", "table": "dwh.secret", "key": "pid", "destination": "secret.ndjson"})
	require.Equal(t, "FAILED", task["status"], task)
	require.Contains(t, task["error"], `catalog cat-a may not read dwh.secret through connection "pg"`)
	for _, name := range []string{filepath.Join(rootB, "stolen.ndjson"), filepath.Join(rootB, "theirs.ndjson"), filepath.Join(rootA, "secret.ndjson")} {
		_, err := os.Stat(name)
		require.True(t, os.IsNotExist(err), "a refused join wrote %s", name)
	}
	// Each failed for good, at its first run: a refusal is not retried.
	var retried []string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT coalesce(array_agg(inputs->>'destination' || ': ' || coalesce(attempt_log::text, '')), '{}')
		FROM tasks.tasks WHERE task_type = 'dwh_join' AND retry_count > 0`).Scan(&retried))
	require.Empty(t, retried, "retried joins and their attempts")
	// A destination outside the tenant's folder is refused when the task
	// is submitted, at the field.
	before = joins()
	{
		res := b.do("POST", "/tasks", tokClientLimited, map[string]any{"task_type": "dwh_join", "schema_name": "s_cat_a",
			"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "parcels", "connection": "pg",
				"table": "dwh.owners", "key": "pid", "destination": "joined.ndjson", "unmatched_destination": "../s_cat_b/x.ndjson"}})
		require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
		require.Equal(t, []string{"/inputs/unmatched_destination"}, problemPointers(t, res))
		require.Equal(t, before, joins(), "a refused submission creates no task")
	}
}
