package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

func TestIngestionSubmit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a", "roads")

	res := b.do("POST", "/ingestion/cat-a/roads", tokClientLimited, ingestionBody("gs://bucket/roads.geojson"))
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	sub := res.json(t)
	id := sub["task_id"].(string)
	require.Equal(t, "/tasks/"+id, sub["status_url"])
	require.Equal(t, "/tasks/"+id, res.header.Get("Location"))
	require.Equal(t, false, sub["deduplicated"])
	require.Equal(t, "PENDING", sub["status"])

	// The task is in the catalog's tenant with the path's ids in its inputs.
	task := b.do("GET", "/tasks/"+id, tokClientLimited, nil).json(t)
	require.Equal(t, "s_cat_a", task["schema_name"])
	require.Equal(t, "ingestion", task["task_type"])
	require.Equal(t, "CATALOG", task["scope"])
	inputs := task["inputs"].(map[string]any)
	require.Equal(t, "cat-a", inputs["catalog_id"])
	require.Equal(t, "roads", inputs["collection_id"])
	require.Equal(t, "gs://bucket/roads.geojson", inputs["source"])
	require.Equal(t, "ingestion:cat-a/roads:gs://bucket/roads.geojson", task["dedup_key"])

	// The same source again deduplicates to the live task, and changes nothing.
	b.unchanged(func() {
		body := ingestionBody("gs://bucket/roads.geojson")
		body["catalog_id"] = "cat-a" // the path's value may be repeated
		res = b.do("POST", "/ingestion/cat-a/roads", tokClient, body)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		dup := res.json(t)
		require.Equal(t, id, dup["task_id"])
		require.Equal(t, true, dup["deduplicated"])
	})

	// Another source is another task.
	res = b.do("POST", "/ingestion/cat-a/roads", tokAdmin, ingestionBody("data/roads-2.csv"))
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.NotEqual(t, id, res.json(t)["task_id"])
}

func TestIngestionBadInput(t *testing.T) {
	t.Parallel()
	b := setupTenants(t, options{maxBody: 4096})

	valid := ingestionBody("gs://bucket/roads.geojson")
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range valid {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := []requestCase{
		{"UnknownCatalog", "POST", "/ingestion/nope/roads", tokAdmin, valid, 404, nil},
		{"UnknownCollection", "POST", "/ingestion/cat-a/nope", tokAdmin, valid, 404, nil},
		{"OtherTenant", "POST", "/ingestion/cat-b/rivers", tokClientLimited, valid, 404, nil},
		{"NoToken", "POST", "/ingestion/cat-a/roads", "", valid, 401, nil},
		{"WorkerToken", "POST", "/ingestion/cat-a/roads", tokWorker, valid, 403, nil},
		{"SQLInPath", "POST", "/ingestion/cat-a'%3B--/roads", tokAdmin, valid, 400, nil},
		{"MalformedJSON", "POST", "/ingestion/cat-a/roads", tokAdmin, `{"source": "x",`, 400, nil},
		{"NotAnObject", "POST", "/ingestion/cat-a/roads", tokAdmin, `"gs://x/y"`, 400, []string{""}},
		{"Oversize", "POST", "/ingestion/cat-a/roads", tokAdmin, with("source", strings.Repeat("a", 5000)), 413, nil},
		{"EveryError", "POST", "/ingestion/cat-a/roads", tokAdmin, map[string]any{
			"format": "shapefile", "id_attribute": 7, "validity_start": "yesterday", "extra": true,
		}, 400, []string{"/source", "/asset_id", "/format", "/id_attribute", "/validity_start", "/extra"}},
		{"UnknownField", "POST", "/ingestion/cat-a/roads", tokAdmin, with("owner", "me"), 400, []string{"/owner"}},
		{"WrongType", "POST", "/ingestion/cat-a/roads", tokAdmin, with("source", []string{"a"}), 400, []string{"/source"}},
		{"SQLInSource", "POST", "/ingestion/cat-a/roads", tokAdmin, with("source", "x'; DROP TABLE tasks.tasks; --"), 400, []string{"/source"}},
		{"TraversalInSource", "POST", "/ingestion/cat-a/roads", tokAdmin, with("source", "../../etc/passwd"), 400, []string{"/source"}},
		{"UnknownScheme", "POST", "/ingestion/cat-a/roads", tokAdmin, with("source", "s3://bucket/x"), 400, []string{"/source"}},
		{"PathContradiction", "POST", "/ingestion/cat-a/roads", tokAdmin, with("collection_id", "rivers"), 400, []string{"/collection_id"}},
	}
	b.requireUnchanged(t, cases)
}

// startEngine runs an engine on the bundle's database with reg's handlers
// until the test ends.
func startEngine(t *testing.T, b *bundle, reg *builtin.Registry) {
	t.Helper()
	bindCatalog(t, reg, b.pool, b.specs, b.files, gcp.Deps{}, b.es, nil, "", nil) // the shipped specs name them; reg may hold them already
	set, err := runnerset.Build(b.specs, runnerset.Options{Registry: reg, DefaultVisibilityTimeout: time.Minute})
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{
		Pool: b.pool, Runners: set.Runners, Pairs: set.Pairs, Rules: set.Rules, PollInterval: 50 * time.Millisecond,
		Metrics: b.server.Metrics(), Logger: quietLogger,
	})
	require.NoError(t, err)
	inproc.Go(t, eng.Run)
}

// follow polls a status_url, as a client would, until the task ends.
func (b *bundle) follow(statusURL, token string) map[string]any {
	b.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// Generous: a GDAL ingestion on a machine under load 60 (make
	// test-dates beside other runs) took over 20 s.
	deadline := time.After(3 * time.Minute)
	for {
		res := b.do("GET", statusURL, token, nil)
		require.Equal(b.t, http.StatusOK, res.status, string(res.body))
		task := res.json(b.t)
		if wftype.TaskStatus(task["status"].(string)).Terminal() {
			return task
		}
		select {
		case <-tick.C:
		case <-deadline:
			b.t.Fatalf("task at %s did not end: %v", statusURL, task)
		}
	}
}

func TestIngestionEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The engine runs a stand-in for the real ingestion handler.
	reg := &builtin.Registry{}
	for name, h := range map[string]builtin.Handler{"noop": builtin.Noop, "sleep": builtin.Sleep, "fail": builtin.Fail, "echo": echo} {
		require.NoError(t, reg.Register(name, h))
	}
	require.NoError(t, reg.Register("ingestion", func(_ context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		var in map[string]any
		if err := json.Unmarshal(task.Inputs, &in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"ingested": in["source"], "records": 2})
	}))
	startEngine(t, b, reg)
	b.createCatalog("cat-a", "roads")

	res := b.do("POST", "/ingestion/cat-a/roads", tokClientLimited, ingestionBody("gs://bucket/roads.geojson"))
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)
	require.Equal(t, map[string]any{"ingested": "gs://bucket/roads.geojson", "records": float64(2)}, task["outputs"])
	require.Equal(t, float64(1), task["attempts"])
	require.NotEmpty(t, task["finished_at"])

	// The engine counts the outcome once its write returned, which a client
	// may see first: wait for the count (generously: the machine is busy).
	var metrics string
	require.Eventually(t, func() bool {
		metrics = string(b.do("GET", "/metrics", "", nil).body)
		return strings.Contains(metrics, `wf_tasks_finished_total{status="COMPLETED",task_type="ingestion"} 1`)
	}, 20*time.Second, 20*time.Millisecond, "the finished task is counted")
	require.Contains(t, metrics, `wf_tasks_claimed_total{task_type="ingestion"} 1`)
}
