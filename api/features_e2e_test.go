package api_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/reporters"
)

// TestFeaturesEndToEnd is issue 7's walkthrough over HTTP: register a
// catalog and a collection, POST /ingestion with the admin regions fixture,
// poll the task to COMPLETED, read its progress, its per-feature report and
// the stored rows, export the collection through POST /tasks, and delete
// the collection, whose feature table a collection_drop task then drops.
func TestFeaturesEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reportDir := t.TempDir()
	startFeatureEngine(t, b, reportDir)
	b.createCatalog("cat-a", "regions")
	root := b.tenantDir("s_cat_a") // the tenant's folder under files.local_roots
	var registered bool
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT to_regclass('s_cat_a.regions') IS NOT NULL`).Scan(&registered))
	require.True(t, registered, "registering the collection created its feature table")
	copyFixture(t, root)

	// A relative source is read from the tenant's folder under the first
	// of files.local_roots.
	res := b.do("POST", "/ingestion/cat-a/regions", tokClientLimited, map[string]any{
		"source": "admin_regions.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "ADMIN_2024",
		"validity_start": "2024-01-01T00:00:00Z",
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)

	outputs := task["outputs"].(map[string]any)
	require.Equal(t, "s_cat_a.regions", outputs["table"])
	require.Equal(t, map[string]any{"read": 6.0, "created": 6.0, "versioned": 0.0, "unchanged": 0.0, "rejected": 0.0}, outputs["features"])
	require.Equal(t, map[string]any{"total": 6.0, "succeeded": 6.0, "rejected": 0.0, "failed": 0.0}, outputs["records"])
	progress := task["progress"].(map[string]any)
	require.Equal(t, 6.0, progress["total"], "the database reporter's counts are the progress")

	// The detailed report: one valid envelope per feature. A client is
	// shown where it is by the folder's name, not the server's path.
	reportPath, ok := strings.CutPrefix(outputs["report_url"].(string), "<tmp>/")
	require.True(t, ok, "the report in the server's temporary folder: %v", outputs["report_url"])
	reportPath = filepath.Join(os.TempDir(), reportPath)
	require.True(t, strings.HasPrefix(reportPath, reportDir), reportPath)
	f, err := os.Open(reportPath)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	byCode := map[string]reporters.Envelope{}
	for sc.Scan() {
		env, err := reporters.ValidateEnvelope(sc.Bytes())
		require.NoError(t, err)
		byCode[env.Record.System[reporters.SystemExternalID].(string)] = env
	}
	require.NoError(t, sc.Err())
	require.Len(t, byCode, 6)
	wy := byCode["US-WY"]
	require.Equal(t, reporters.RecordSuccess, wy.Status)
	require.Equal(t, "[2024-01-01T00:00:00Z,)", wy.Record.System[reporters.SystemValidity])
	area, err := wy.Record.Stats["area"].(interface{ Float64() (float64, error) }).Float64()
	require.NoError(t, err)
	require.InEpsilon(t, 253587744820.5, area, 1e-4, "GeographicLib's area of the fixture's Wyoming")

	// The rows, with the reported identities.
	var rows int
	var geoid string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*), max(geoid::text) FILTER (WHERE external_id = 'US-WY') FROM s_cat_a.regions`).Scan(&rows, &geoid))
	require.Equal(t, 6, rows)
	require.Equal(t, wy.Record.ID, geoid)

	// A CSV source with its geometry columns named; a bad row is rejected alone.
	csvFile := filepath.Join(root, "towns.csv")
	require.NoError(t, os.WriteFile(csvFile, []byte("code;y;x\nT1;45.07;7.69\nT2;north;7.7\n"), 0o644))
	res = b.do("POST", "/ingestion/cat-a/regions", tokClientLimited, map[string]any{
		"source": csvFile, "format": "csv", "id_attribute": "code", "asset_id": "TOWNS",
		"csv": map[string]any{"lon_column": "x", "lat_column": "y", "delimiter": ";"},
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task = b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)
	require.Equal(t, map[string]any{"read": 2.0, "created": 1.0, "versioned": 0.0, "unchanged": 0.0, "rejected": 1.0},
		task["outputs"].(map[string]any)["features"])

	// Each ingestion.completed started an elasticsearch task (specs/search.yaml),
	// which indexed the collection into its index: 6 features, then the town.
	require.Eventually(t, func() bool {
		var done int
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks
			WHERE task_type = 'elasticsearch' AND schema_name = 's_cat_a' AND status = 'COMPLETED'`).Scan(&done))
		return done == 2
	}, 30*time.Second, 50*time.Millisecond, "two elasticsearch tasks complete")
	require.Len(t, b.es.Docs("wf-s_cat_a-regions"), 7)
	require.Equal(t, "geo_shape", b.es.Mapping("wf-s_cat_a-regions")["properties"].(map[string]any)["geometry"].(map[string]any)["type"])

	// Export the collection through the task API: a relative destination
	// lands in the tenant's folder under the first of files.local_roots.
	res = b.do("POST", "/tasks", tokClientLimited, map[string]any{
		"task_type": "export_features", "schema_name": "s_cat_a",
		"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "destination": "regions.geojson", "format": "geojson"},
	})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task = b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)
	require.Equal(t, 7.0, task["outputs"].(map[string]any)["features"])
	exported, err := os.ReadFile(filepath.Join(root, "regions.geojson"))
	require.NoError(t, err)
	require.Contains(t, string(exported), `"external_id":"US-WY"`)

	// Deleting the collection drops its table through collection.deleted.
	res = b.do("DELETE", "/catalogs/cat-a/collections/regions", tokClientLimited, nil)
	require.Less(t, res.status, 300, string(res.body))
	require.Eventually(t, func() bool {
		var exists bool
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT to_regclass('s_cat_a.regions') IS NOT NULL`).Scan(&exists))
		return !exists
	}, 20*time.Second, 50*time.Millisecond, "the collection_drop task drops the feature table")
	require.Eventually(t, func() bool { return len(b.es.Indices()) == 0 }, 20*time.Second, 50*time.Millisecond,
		"the elasticsearch_drop task deletes the collection's index")
}

// TestFeaturesOutsideRoots checks over HTTP that a client cannot make the
// service read or write local files outside its tenant's folder under
// files.local_roots: such a location is refused when the task is submitted
// (400 naming the field), and a task naming one that was created behind
// the API, where nothing checked it, ends FAILED when it runs, naming the
// location but none of the server's folders, having read and written
// nothing.
func TestFeaturesOutsideRoots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	outside := t.TempDir()
	startFeatureEngine(t, b, t.TempDir())
	b.createCatalog("cat-a", "regions")
	root := b.tenantDir("s_cat_a")
	copyFixture(t, outside)
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "passwd.geojson")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "elsewhere")))
	sources := []string{
		"/etc/passwd", "file:///etc/passwd", "passwd.geojson", "elsewhere/admin_regions.geojson",
		filepath.Join(outside, "admin_regions.geojson"),
		"%2e%2e/%2e%2e/etc/passwd", "file://" + filepath.ToSlash(root) + "/%2e%2e/%2e%2e/etc/passwd",
	}
	destinations := []string{
		filepath.Join(outside, "out.geojson"), "file://" + filepath.ToSlash(filepath.Join(outside, "out.ndjson")),
		"elsewhere/out2.ndjson", "../" + filepath.Base(outside) + "/out.ndjson", "%2e%2e/out3.ndjson",
	}
	ingestion := func(source string) map[string]any {
		return map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "source": source, "format": "geojson", "id_attribute": "code", "asset_id": "A1"}
	}
	export := func(dest string) map[string]any {
		return map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "destination": dest}
	}

	// Over HTTP: 400 at the field, nothing queued.
	for _, source := range sources {
		body := ingestion(source)
		delete(body, "catalog_id")
		delete(body, "collection_id")
		res := b.do("POST", "/ingestion/cat-a/regions", tokClientLimited, body)
		require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", source, res.body)
		require.Equal(t, []string{"/source"}, problemPointers(t, res), string(res.body))
		require.NotContains(t, strings.ReplaceAll(string(res.body), source, ""), b.root, "the answer names no server folder beyond the location given")
	}
	for _, dest := range destinations {
		res := b.do("POST", "/tasks", tokClientLimited, map[string]any{"task_type": "export_features", "schema_name": "s_cat_a", "inputs": export(dest)})
		require.Equal(t, http.StatusBadRequest, res.status, "%s: %s", dest, res.body)
		require.Equal(t, []string{"/inputs/destination"}, problemPointers(t, res), string(res.body))
		require.NotContains(t, strings.ReplaceAll(string(res.body), dest, ""), b.root)
	}
	var queued int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type IN ('ingestion', 'export_features')`).Scan(&queued))
	require.Zero(t, queued)

	// Behind the API (a program's own client, which checks no files): the
	// handlers refuse the same locations when the tasks run.
	var reqs []client.Request
	for _, source := range sources {
		raw, _ := json.Marshal(ingestion(source))
		reqs = append(reqs, client.Request{TaskType: "ingestion", SchemaName: "s_cat_a", Inputs: raw})
	}
	for _, dest := range destinations {
		raw, _ := json.Marshal(export(dest))
		reqs = append(reqs, client.Request{TaskType: "export_features", SchemaName: "s_cat_a", Inputs: raw})
	}
	created, err := client.New(b.store, b.specs).EnqueueMany(b.ctx, reqs)
	require.NoError(t, err)
	locations := append(append([]string(nil), sources...), destinations...)
	for i, c := range created {
		task := b.follow("/tasks/"+c.Task.ID.String(), tokClientLimited)
		require.Equal(t, "FAILED", task["status"], task)
		msg, _ := task["error"].(string)
		require.Regexp(t, `outside the files of tenant s_cat_a|'\.\.' segment`, msg, task)
		// Beyond the location as the client wrote it (shown relative to its
		// folder when it named it from there), the error names no folder
		// of the server's (not the root, not a link's target).
		shown := strings.TrimPrefix(locations[i], "file://"+filepath.ToSlash(root)+"/")
		rest := strings.ReplaceAll(strings.ReplaceAll(msg, locations[i], "LOCATION"), shown, "LOCATION")
		require.NotContains(t, rest, b.root, msg)
		require.NotContains(t, rest, outside, msg)
		require.NotContains(t, rest, "/etc/passwd", msg)
	}

	var rows int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM s_cat_a.regions`).Scan(&rows))
	require.Zero(t, rows, "nothing was read")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was written outside the tenant's folder")
}
