package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// syncFeatureSpecs run the ingestion and gdal handlers in front of their
// caller (SYNCHRONOUS), as an operator may declare them.
const syncFeatureSpecs = `
kind: TaskType
name: ingestion_now
description: The ingestion, in front of its caller.
scope: CATALOG
execution_mode: SYNCHRONOUS
api: {create: [client, admin]}
handler: {builtin: ingestion}
inputs: {type: object, properties: {source: {type: string}}}
files: [source]
---
kind: TaskType
name: gdal_now
description: GDAL's description of a file, in front of its caller.
scope: CATALOG
execution_mode: SYNCHRONOUS
api: {create: [client, admin]}
handler: {builtin: gdal}
inputs: {type: object, properties: {uri: {type: string}}}
files: [uri]
`

// systemPathRE finds absolute paths under the usual system folders in text
// (not inside a URL path such as /tasks/…: those folders are never
// routes).
var systemPathRE = regexp.MustCompile(`(^|[^A-Za-z0-9_.~/-])/(tmp|usr|var|etc|home|root|opt|proc|dev|srv|run|mnt|work|private|nix)/`)

// TestClientsSeeNoServerPaths is the audit of "errors shown to clients do
// not reveal server file paths": a catalog-limited client drives the
// failures a tenant meets (a missing source, a corrupt file of each ingest
// format, GDAL on a broken asset and file, an export to a destination that
// cannot be written, warehouse joins that cannot connect or find their
// table, an index and tiles of a collection that is not there, an http
// source that fails, SYNCHRONOUS runs, a workflow run) and successes that
// write reports and tiles; then every string it can see — each answer's
// body (problems included), every task with its outputs, progress, error
// and attempt history, its assets, its workflow runs, the dashboard's
// overview — and every webhook delivery of its events is scanned for the
// files root, the report and tile folders, the test's temporary folders,
// any absolute path under a system folder, the database's URL, user and
// password, and the credentials the requests carried. Paths inside the
// tenant's own folder are shown relative to it.
func TestClientsSeeNoServerPaths(t *testing.T) {
	t.Parallel()
	// A warehouse (another database): one connection with its URL, one with
	// a wrong password.
	dwh := dbtest.NewPool(t)
	_, err := dwh.Exec(t.Context(), `CREATE SCHEMA dwh; CREATE TABLE dwh.owners (pid bigint, owner text)`)
	require.NoError(t, err)
	dwhURL := dwh.Config().ConnString()
	bad, err := url.Parse(dwhURL)
	require.NoError(t, err)
	bad.User = url.UserPassword(dwh.Config().ConnConfig.User, "wr0ng-pw-s3cret")
	tileCache := t.TempDir()
	b := setup(t, options{specs: syncFeatureSpecs, tileCache: "file://" + filepath.ToSlash(tileCache), warehouses: []config.WarehouseConnection{
		{Name: "pg", Type: config.WarehousePostgres, URL: dwhURL, Catalogs: []string{"cat-a"}, Tables: []string{"dwh.*"}},
		{Name: "pgbad", Type: config.WarehousePostgres, URL: bad.String(), Catalogs: []string{"cat-a"}, Tables: []string{"dwh.*"}},
	}})
	reportDir := t.TempDir()
	startFeatureEngine(t, b, reportDir)
	rc := &receiver{}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	_, err = b.store.InsertWebhookSubscriber(b.ctx, store.NewWebhookSubscriber{URL: hook.URL, Secret: "whsec-0123456789", EventTypes: []string{"*"}})
	require.NoError(t, err)
	// An http source that answers 500, behind credentials.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom at "+b.root, http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	httpSource := strings.Replace(failing.URL, "http://", "http://reader:src-pw-s3cret@", 1) + "/x.geojson?token=src-tok-s3cret"

	b.createCatalog("cat-a", "regions")
	dir := b.tenantDir("s_cat_a")
	copyFixture(t, dir)
	for name, content := range map[string]string{
		"bad.geojson": `{"type": "FeatureCollection", "features": [{"type": "Feat`,
		"bad.ndjson":  "{\"type\": \"Feature\", \"geometry\": 12}\nnot json at all\n",
		"bad.csv":     "code;y;x\n\"T1;45;7\n",
		"bad.gpkg":    "this is no GeoPackage",
		"bad.tif":     "this is no GeoTIFF",
		"blocker":     "a file where a folder is wanted",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}

	var shown []string // every body the client was sent
	do := func(method, path string, body any) response {
		t.Helper()
		res := b.do(method, path, tokClientLimited, body)
		shown = append(shown, method+" "+path+": "+string(res.body))
		return res
	}
	var tasks []string // status URLs
	submit := func(method, path string, body any) {
		t.Helper()
		res := do(method, path, body)
		if res.status == http.StatusAccepted {
			tasks = append(tasks, res.json(t)["status_url"].(string))
		}
	}
	ingest := func(source, format string, extra map[string]any) {
		t.Helper()
		body := map[string]any{"source": source, "format": format, "id_attribute": "code", "asset_id": "A_" + format}
		for k, v := range extra {
			body[k] = v
		}
		submit("POST", "/ingestion/cat-a/regions", body)
	}
	task := func(typ string, inputs map[string]any) {
		t.Helper()
		submit("POST", "/tasks", map[string]any{"task_type": typ, "schema_name": "s_cat_a", "inputs": inputs})
	}

	// Successes that write a report (outputs.report_url) and tiles (outputs.cache).
	ingest("admin_regions.geojson", "geojson", nil)
	require.Len(t, tasks, 1)
	require.Equal(t, "COMPLETED", b.follow(tasks[0], tokClientLimited)["status"])
	task("tiles_preseed", map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "max_zoom": 1})
	// Failures.
	ingest("missing.geojson", "geojson", nil)
	ingest("bad.geojson", "geojson", nil)
	ingest("bad.ndjson", "ndjson", nil)
	ingest("bad.csv", "csv", map[string]any{"csv": map[string]any{"lon_column": "x", "lat_column": "y", "delimiter": ";"}})
	ingest("bad.gpkg", "gdal", nil)
	ingest(httpSource, "geojson", nil)
	ingest("missing-dir/", "geojson", nil)
	ingest("/etc/passwd", "geojson", nil)                                 // refused at submission
	ingest(filepath.Join(b.root, "s_cat_b", "x.geojson"), "geojson", nil) // another tenant's folder
	task("gdal", map[string]any{"catalog_id": "cat-a", "uri": "bad.tif"})
	task("gdal", map[string]any{"catalog_id": "cat-a", "uri": "missing.tif"})
	do("POST", "/catalogs/cat-a/assets", map[string]any{"asset_id": "BROKEN", "uri": "bad.tif", "kind": "raster"}) // describe-new-assets fails
	task("export_features", map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "destination": "blocker/out.geojson"})
	task("export_features", map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "destination": filepath.Join(reportDir, "x.geojson")})
	join := map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "connection": "pgbad", "table": "dwh.owners", "key": "code", "destination": "joined.ndjson"}
	task("dwh_join", join)
	join["connection"], join["table"] = "pg", "dwh.nope"
	task("dwh_join", join)
	task("elasticsearch", map[string]any{"catalog_id": "cat-a", "collection_id": "nope"})
	task("tiles_preseed", map[string]any{"catalog_id": "cat-a", "collection_id": "nope", "max_zoom": 1})
	do("POST", "/tasks", map[string]any{"task_type": "ingestion_now", "schema_name": "s_cat_a",
		"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "source": "missing.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "NOW"}})
	do("POST", "/tasks", map[string]any{"task_type": "ingestion_now", "schema_name": "s_cat_a",
		"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "source": "bad.gpkg", "format": "gdal", "id_attribute": "code", "asset_id": "NOW"}})
	do("POST", "/tasks", map[string]any{"task_type": "gdal_now", "schema_name": "s_cat_a", "inputs": map[string]any{"catalog_id": "cat-a", "uri": "bad.tif"}})
	run := do("POST", "/workflows/publish_collection/runs", map[string]any{"schema_name": "s_cat_a",
		"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "source": "bad.gpkg", "format": "gdal", "asset_id": "PUB"}})
	require.Equal(t, http.StatusAccepted, run.status, string(run.body))
	b.idle()

	// Everything the client can read.
	var ids []string
	for cursor := ""; ; {
		res := do("GET", "/tasks?limit=100"+cursor, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		page := res.json(t)
		for _, it := range page["items"].([]any) {
			ids = append(ids, it.(map[string]any)["task_id"].(string))
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = "&cursor=" + url.QueryEscape(next)
	}
	require.GreaterOrEqual(t, len(ids), 20, "the cases' tasks, and those their events started")
	statuses := map[string]int{}
	for _, id := range ids {
		res := do("GET", "/tasks/"+id, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		statuses[res.json(t)["status"].(string)]++
	}
	require.GreaterOrEqual(t, statuses["FAILED"]+statuses["DEAD_LETTER"], 12, "the failures failed: %v", statuses)
	do("GET", "/catalogs/cat-a/assets", nil)
	do("GET", "/catalogs/cat-a/assets/BROKEN", nil)
	runs := do("GET", "/workflows/runs", nil)
	require.Len(t, runs.json(t)["runs"], 1)
	for _, it := range runs.json(t)["runs"].([]any) {
		do("GET", "/workflows/runs/"+it.(map[string]any)["run_id"].(string), nil)
	}
	do("GET", "/stats", nil)
	rc.mu.Lock()
	deliveries := fmt.Sprint(rc.bodies)
	rc.mu.Unlock()
	require.Contains(t, deliveries, "catalog.created") // the shipped specs send the lifecycle events

	cc := dwh.Config().ConnConfig
	secrets := []string{b.root, reportDir, tileCache, os.TempDir() + "/", "file:///", dwhURL, "wr0ng-pw-s3cret",
		"src-pw-s3cret", "src-tok-s3cret", "whsec-0123456789"}
	if cc.Password != "" {
		secrets = append(secrets, cc.Password)
	}
	if wd, err := os.Getwd(); err == nil {
		secrets = append(secrets, filepath.Dir(wd))
	}
	// The client's own words may come back ("/etc/passwd is outside …"):
	// they reveal nothing.
	echoes := strings.NewReplacer("/etc/passwd", "ECHO", filepath.Join(b.root, "s_cat_b", "x.geojson"), "ECHO",
		filepath.Join(reportDir, "x.geojson"), "ECHO")
	for _, body := range append(shown, "webhook deliveries: "+deliveries) {
		body = echoes.Replace(body)
		what, _, _ := strings.Cut(body, ": ")
		for _, s := range append(secrets, "user="+cc.User) {
			if i := strings.Index(body, s); i >= 0 {
				t.Errorf("%s shows %q: …%s…", what, s, body[max(0, i-200):min(len(body), i+len(s)+100)])
			}
		}
		if loc := systemPathRE.FindStringIndex(body); loc != nil {
			t.Errorf("%s shows a server path: …%s…", what, body[max(0, loc[0]-200):min(len(body), loc[1]+100)])
		}
	}
	// Paths inside the tenant's folder are shown relative to it, by the
	// handlers themselves (the answers' net, which shows the files root as
	// <files>, had nothing of the tenant's to hide); the report and tile
	// folders by name.
	all := strings.Join(shown, "\n")
	require.Contains(t, all, `error opening missing.geojson: not found`)
	require.Contains(t, all, `error creating folder blocker`)
	require.Contains(t, all, `error describing bad.tif with GDAL`)
	require.Contains(t, all, `"report_url":"<tmp>/`)
	require.Contains(t, all, `"cache":"<tiles>/s_cat_a/`)
	require.NotContains(t, all, "<files>/s_cat_a")
}
