package api_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/gcsreporter"
	"github.com/wfhq/wf/reporters/standard"
	"github.com/wfhq/wf/wftype"
)

// startFeatureEngine runs an engine as `wf run` does for feature data: the
// registry's handlers, the standard reporters (detailed reports under
// reportDir), the event consumer, and the feature handlers bound in setup,
// local files limited to b.root (as files.local_roots).
func startFeatureEngine(t *testing.T, b *bundle, reportDir string) {
	t.Helper()
	st := store.New(b.pool)
	factory, err := standard.Open(b.ctx, standard.Config{Progress: st, GCS: gcsreporter.Config{LocalDir: reportDir}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = factory.Close() })
	set, err := runnerset.Build(b.specs, runnerset.Options{Registry: b.reg, DefaultVisibilityTimeout: time.Minute})
	require.NoError(t, err)
	cons, err := events.NewConsumer(events.ConsumerConfig{Store: st, Client: client.New(st, b.specs), Specs: b.specs,
		Owner: "e2e", Interval: 50 * time.Millisecond, Logger: quietLogger})
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{
		Pool: b.pool, Runners: set.Runners, Pairs: set.Pairs, Rules: set.Rules, PollInterval: 50 * time.Millisecond,
		Logger: quietLogger, Owner: "e2e",
		Services: []engine.Service{{Name: "event consumer", Run: func(ctx context.Context) error { cons.Run(ctx, nil); return nil }}},
		Reporters: func(task *wftype.Task) (reporters.Reporter, error) {
			tt, _ := b.specs.TaskType(task.TaskType)
			var names []string
			for _, k := range tt.Reporters() {
				names = append(names, string(k))
			}
			return factory.New(names, reporters.TaskInfo{ID: task.ID, SchemaName: task.SchemaName, TaskType: task.TaskType})
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestFeaturesEndToEnd is issue 7's walkthrough over HTTP: register a
// catalog and a collection, POST /ingestion with the admin regions fixture,
// poll the task to COMPLETED, read its progress, its per-feature report and
// the stored rows, export the collection through POST /tasks, and delete
// the collection, whose feature table a collection_drop task then drops.
func TestFeaturesEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reportDir, root := t.TempDir(), b.root
	startFeatureEngine(t, b, reportDir)
	b.createCatalog("cat-a", "regions")
	var registered bool
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT to_regclass('s_cat_a.regions') IS NOT NULL`).Scan(&registered))
	require.True(t, registered, "registering the collection created its feature table")
	copyFixture(t, root)

	// A relative source is read from the first of files.local_roots.
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

	// The detailed report: one valid envelope per feature.
	reportURL, err := url.Parse(outputs["report_url"].(string))
	require.NoError(t, err)
	require.Equal(t, "file", reportURL.Scheme)
	f, err := os.Open(filepath.FromSlash(reportURL.Path))
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

	// Export the collection through the task API: a relative destination
	// lands in the first of files.local_roots.
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
}

// copyFixture copies the admin regions fixture into folder.
func copyFixture(t *testing.T, folder string) {
	t.Helper()
	fixture, err := os.ReadFile("../catalog/ingest/testdata/admin_regions.geojson")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(folder, "admin_regions.geojson"), fixture, 0o644))
}

// TestFeaturesOutsideRoots checks over HTTP that a client cannot make the
// service read or write local files outside files.local_roots: such an
// ingestion or export ends FAILED, naming the path and the allowed folders,
// having read and written nothing.
func TestFeaturesOutsideRoots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root, outside := b.root, t.TempDir()
	startFeatureEngine(t, b, t.TempDir())
	b.createCatalog("cat-a", "regions")
	copyFixture(t, outside)
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "passwd.geojson")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "elsewhere")))
	refusal := " is outside the allowed folders (" + root + "); set files.local_roots"
	passwd, err := filepath.EvalSymlinks("/etc/passwd")
	require.NoError(t, err)
	shownPasswd := "/etc/passwd"
	if passwd != shownPasswd {
		shownPasswd += " (a link to " + passwd + ")"
	}

	var statusURLs []string
	want := map[string]string{}
	submit := func(res response, named string) {
		t.Helper()
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
		u := res.json(t)["status_url"].(string)
		statusURLs = append(statusURLs, u)
		want[u] = named + refusal
	}
	for source, named := range map[string]string{
		"/etc/passwd":        shownPasswd,
		"file:///etc/passwd": shownPasswd,
		"passwd.geojson":     filepath.Join(root, "passwd.geojson") + " (a link to " + passwd + ")",
		"elsewhere/admin_regions.geojson": filepath.Join(root, "elsewhere", "admin_regions.geojson") + " (a link to " +
			filepath.Join(outside, "admin_regions.geojson") + ")",
		filepath.Join(outside, "admin_regions.geojson"): filepath.Join(outside, "admin_regions.geojson"),
	} {
		submit(b.do("POST", "/ingestion/cat-a/regions", tokClientLimited, map[string]any{
			"source": source, "format": "geojson", "id_attribute": "code", "asset_id": "A1",
		}), named)
	}
	for dest, named := range map[string]string{
		filepath.Join(outside, "out.geojson"):          filepath.Join(outside, "out.geojson"),
		"../" + filepath.Base(outside) + "/out.ndjson": filepath.Join(outside, "out.ndjson"),
		"elsewhere/out2.ndjson": filepath.Join(root, "elsewhere", "out2.ndjson") + " (a link to " +
			filepath.Join(outside, "out2.ndjson") + ")",
	} {
		submit(b.do("POST", "/tasks", tokClientLimited, map[string]any{
			"task_type": "export_features", "schema_name": "s_cat_a",
			"inputs": map[string]any{"catalog_id": "cat-a", "collection_id": "regions", "destination": dest},
		}), named)
	}
	for _, u := range statusURLs {
		task := b.follow(u, tokClientLimited)
		require.Equal(t, "FAILED", task["status"], task)
		require.Contains(t, task["error"], want[u], task)
	}
	// A relative source that climbs out is refused before it is queued.
	res := b.do("POST", "/ingestion/cat-a/regions", tokClientLimited, map[string]any{
		"source": "../../etc/passwd", "format": "geojson", "id_attribute": "code", "asset_id": "A1",
	})
	require.Equal(t, http.StatusBadRequest, res.status, string(res.body))

	var rows int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM s_cat_a.regions`).Scan(&rows))
	require.Zero(t, rows, "nothing was read")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was written outside the roots")
}
