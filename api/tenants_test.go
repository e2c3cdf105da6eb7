package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
)

// The tenant-isolation suite (issue 13). Two catalog-limited client tokens,
// client-a (cat-a) and client-b (cat-b), each with a catalog holding
// ingested features. client-a tries every known way of reaching cat-b; the
// checks are on outcomes once the engine has run everything the attempts
// queued: cat-b's schema, tables and rows, its tasks and events, and the
// webhook deliveries, not only the status codes.

// receiver is a webhook subscriber on loopback that records every delivery.
type receiver struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	rc.mu.Lock()
	rc.bodies = append(rc.bodies, body)
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// deliveries returns "event_type catalog_id" of every delivery received.
func (rc *receiver) deliveries() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, b := range rc.bodies {
		payload, _ := b["payload"].(map[string]any)
		out = append(out, fmt.Sprintf("%v %v", b["event_type"], payload["catalog_id"]))
	}
	return out
}

// tenantState fingerprints what belongs to one tenant: its registry rows,
// the tables of its schema and their rows, its tasks (id, type, status) and
// its events.
func (b *bundle) tenantState(catalogID, schema string) string {
	b.t.Helper()
	var out strings.Builder
	q := func(label, sql string, args ...any) {
		var v string
		require.NoError(b.t, b.pool.QueryRow(b.ctx, sql, args...).Scan(&v), label)
		fmt.Fprintf(&out, "%s: %s\n", label, v)
	}
	q("catalog", `SELECT coalesce(string_agg(catalog_id || '/' || schema_name, ','), '') FROM catalog.catalogs WHERE catalog_id = $1`, catalogID)
	q("collections", `SELECT coalesce(string_agg(collection_id, ',' ORDER BY collection_id), '') FROM catalog.collections WHERE catalog_id = $1`, catalogID)
	q("schema", `SELECT count(*)::text FROM pg_namespace WHERE nspname = $1`, schema)
	q("tables", `SELECT coalesce(string_agg(tablename, ',' ORDER BY tablename), '') FROM pg_tables WHERE schemaname = $1`, schema)
	rows, err := b.pool.Query(b.ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, schema)
	require.NoError(b.t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(b.t, err)
	for _, tbl := range tables {
		q("rows of "+tbl, fmt.Sprintf(`SELECT count(*) || ' ' || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM %q.%q x`, schema, tbl))
	}
	q("tasks", `SELECT coalesce(string_agg(task_id || ' ' || task_type || ' ' || status, ',' ORDER BY task_id), '') FROM tasks.tasks WHERE schema_name = $1`, schema)
	q("events", `SELECT coalesce(string_agg(event_id || ' ' || event_type, ',' ORDER BY event_id), '') FROM tasks.events WHERE schema_name = $1`, schema)
	return out.String()
}

// idle waits until the engine has run every task and consumed every event:
// no event is PROCESSING or due (one no subscription matches is held back,
// PENDING, until it is events.unmatched_grace old).
func (b *bundle) idle() {
	b.t.Helper()
	require.Eventually(b.t, func() bool {
		var live int
		require.NoError(b.t, b.pool.QueryRow(b.ctx, `
SELECT (SELECT count(*) FROM tasks.tasks WHERE status IN ('PENDING', 'ACTIVE'))
     + (SELECT count(*) FROM tasks.events WHERE status = 'PROCESSING' OR (status = 'PENDING' AND run_after <= now()))`).Scan(&live))
		return live == 0
	}, 60*time.Second, 20*time.Millisecond, "the engine did not finish its work")
}

// regionsBody ingests the admin regions fixture.
var regionsBody = map[string]any{"source": "admin_regions.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "ADMIN_2024"}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startFeatureEngine(t, b, t.TempDir())
	copyFixture(t, b.tenantDir("s_cat_a"))
	copyFixture(t, b.tenantDir("s_cat_b"))

	rc := &receiver{}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	_, err := b.store.InsertWebhookSubscriber(b.ctx, store.NewWebhookSubscriber{URL: hook.URL, Secret: "whsec-0123456789", EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)

	// Both tenants register and ingest through their own tokens.
	for _, tenant := range []struct{ token, id string }{{tokClientLimited, "cat-a"}, {tokClientB, "cat-b"}} {
		res := b.do("POST", "/catalogs", tenant.token, map[string]any{"catalog_id": tenant.id})
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		res = b.do("POST", "/catalogs/"+tenant.id+"/collections", tenant.token, map[string]any{"collection_id": "regions"})
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
		res = b.do("POST", "/ingestion/"+tenant.id+"/regions", tenant.token, regionsBody)
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
		require.Equal(t, "COMPLETED", b.follow(res.json(t)["status_url"].(string), tenant.token)["status"])
	}
	b.idle()
	before := b.tenantState("cat-b", "s_cat_b")
	require.Contains(t, before, "rows of regions: 6 ")
	// A schema of someone else's in the same database.
	_, err = b.pool.Exec(b.ctx, `CREATE SCHEMA legacy; CREATE TABLE legacy.accounts (id int); INSERT INTO legacy.accounts VALUES (1)`)
	require.NoError(t, err)

	dropB := map[string]any{"catalog_id": "cat-b", "schema_name": "s_cat_b", "collections": []string{"regions"}}
	attempts := []requestCase{
		// 1. Creating the destructive and internal types directly.
		{"catalog_drop in own tenant naming B's schema", "POST", "/tasks", tokClientLimited,
			map[string]any{"task_type": "catalog_drop", "schema_name": "s_cat_a", "inputs": dropB}, http.StatusForbidden, nil},
		{"catalog_drop as system", "POST", "/tasks", tokClientLimited,
			map[string]any{"task_type": "catalog_drop", "inputs": dropB}, http.StatusForbidden, nil},
		{"catalog_drop even as admin", "POST", "/tasks", tokAdmin,
			map[string]any{"task_type": "catalog_drop", "inputs": dropB}, http.StatusForbidden, nil},
		{"collection_drop", "POST", "/tasks", tokClientLimited, map[string]any{"task_type": "collection_drop", "schema_name": "s_cat_a",
			"inputs": map[string]any{"catalog_id": "cat-b", "collection_id": "regions", "schema_name": "s_cat_b"}}, http.StatusForbidden, nil},
		{"event_dispatch of a forged catalog.deleted", "POST", "/tasks", tokClientLimited, map[string]any{"task_type": "event_dispatch",
			"inputs": map[string]any{"event_id": "x", "event_type": "catalog.deleted", "payload": map[string]any{"catalog_id": "cat-b"}}}, http.StatusForbidden, nil},
		{"webhook_delivery", "POST", "/tasks", tokClientLimited, map[string]any{"task_type": "webhook_delivery", "inputs": map[string]any{
			"subscriber_id": "0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d", "event_id": "x", "event_type": "catalog.deleted", "payload": map[string]any{}}}, http.StatusForbidden, nil},
		// 2. Lifecycle events, and events for another tenant.
		{"catalog.deleted naming B in own tenant", "POST", "/events", tokClientLimited, map[string]any{"event_type": "catalog.deleted",
			"schema_name": "s_cat_a", "payload": dropB}, http.StatusForbidden, nil},
		{"collection.deleted naming B", "POST", "/events", tokClientLimited, map[string]any{"event_type": "collection.deleted",
			"schema_name": "s_cat_a", "payload": map[string]any{"catalog_id": "cat-b", "collection_id": "regions"}}, http.StatusForbidden, nil},
		{"catalog.deleted even as admin", "POST", "/events", tokAdmin, map[string]any{"event_type": "catalog.deleted",
			"schema_name": "s_cat_b", "payload": dropB}, http.StatusForbidden, nil},
		{"a forged workflow.completed", "POST", "/events", tokClientLimited, map[string]any{"event_type": "workflow.completed",
			"schema_name": "s_cat_a", "payload": map[string]any{"run_id": "0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d"}}, http.StatusForbidden, nil},
		{"workflow.failed even as admin", "POST", "/events", tokAdmin, map[string]any{"event_type": "workflow.failed"}, http.StatusForbidden, nil},
		{"an event in B's tenant", "POST", "/events", tokClientLimited, map[string]any{"event_type": "survey.updated", "schema_name": "s_cat_b"}, http.StatusNotFound, nil},
		{"an event in system", "POST", "/events", tokClientLimited, map[string]any{"event_type": "survey.updated"}, http.StatusNotFound, nil},
		// 3. Inputs that name another tenant's catalog, in one's own tenant.
		{"export of B's collection", "POST", "/tasks", tokClientLimited, map[string]any{"task_type": "export_features", "schema_name": "s_cat_a",
			"inputs": map[string]any{"catalog_id": "cat-b", "collection_id": "regions", "destination": "stolen.ndjson"}}, http.StatusAccepted, nil},
		{"ingestion into B's collection", "POST", "/tasks", tokClientLimited, map[string]any{"task_type": "ingestion", "schema_name": "s_cat_a",
			"inputs": map[string]any{"catalog_id": "cat-b", "collection_id": "regions", "source": "admin_regions.geojson", "format": "geojson",
				"id_attribute": "code", "asset_id": "X"}}, http.StatusAccepted, nil},
		{"a task in B's tenant", "POST", "/tasks", tokClientLimited, map[string]any{"task_type": "noop", "schema_name": "s_cat_b"}, http.StatusNotFound, nil},
		// 4. The registry: another's catalog, a schema wf did not create.
		{"delete B's catalog", "DELETE", "/catalogs/cat-b", tokClientLimited, nil, http.StatusNotFound, nil},
		{"delete B's collection", "DELETE", "/catalogs/cat-b/collections/regions", tokClientLimited, nil, http.StatusNotFound, nil},
		{"register a catalog on B's schema", "POST", "/catalogs", tokClient, map[string]any{"catalog_id": "cat-x", "schema_name": "s_cat_b"}, http.StatusConflict, nil},
		{"register a catalog on a foreign schema", "POST", "/catalogs", tokClient, map[string]any{"catalog_id": "cat-y", "schema_name": "legacy"}, http.StatusConflict, nil},
		{"ingest into B's collection by path", "POST", "/ingestion/cat-b/regions", tokClientLimited, regionsBody, http.StatusNotFound, nil},
	}
	var accepted []string
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			res := b.in(t).do(a.method, a.path, a.token, a.body)
			require.Equal(t, a.status, res.status, string(res.body))
			if a.status == http.StatusForbidden {
				require.NotEmpty(t, problemPointers(t, res), "a 403 names the field: %s", res.body)
			}
			if a.status == http.StatusAccepted {
				accepted = append(accepted, res.json(t)["status_url"].(string))
			}
		})
	}

	b.idle()

	// Behind the API: a forged catalog.deleted for B written straight to the
	// outbox (as a rogue embedding program could) and drop tasks created by
	// the Go client are turned down by the drop handlers themselves, and
	// the webhook fan-out sends that event to no one.
	em := events.NewEmitter(b.store)
	raw, _ := json.Marshal(dropB)
	_, err = em.Emit(b.ctx, events.Event{Type: "catalog.deleted", Scope: events.ScopeCatalog, SchemaName: "s_cat_b", Payload: raw})
	require.NoError(t, err)
	cl := client.New(b.store, b.specs)
	forged, err := cl.EnqueueMany(b.ctx, []client.Request{
		{TaskType: "catalog_drop", SchemaName: "system", Inputs: raw},
		{TaskType: "catalog_drop", SchemaName: "system", Inputs: json.RawMessage(`{"catalog_id": "gone", "schema_name": "legacy", "collections": ["accounts"]}`)},
		{TaskType: "collection_drop", SchemaName: "system", Inputs: json.RawMessage(`{"catalog_id": "cat-a", "collection_id": "regions", "schema_name": "s_cat_b"}`)},
	})
	require.NoError(t, err)

	// And A deletes its own catalog for real: that drop runs.
	res := b.do("DELETE", "/catalogs/cat-a", tokClientLimited, nil)
	require.Equal(t, http.StatusNoContent, res.status, string(res.body))
	b.idle()

	// Outcomes. The tasks the API accepted failed for good, naming the tenant.
	for _, u := range accepted {
		task := b.follow(u, tokAdmin)
		require.Equal(t, "FAILED", task["status"], task)
		require.Contains(t, task["error"], `the task belongs to tenant "s_cat_a", the catalog to "s_cat_b"`)
	}
	for _, f := range forged {
		got, err := b.store.GetTask(b.ctx, f.Task.ID)
		require.NoError(t, err)
		require.Equal(t, "FAILED", string(got.Status), "forged drop %s: %v", got.TaskType, got.Error)
	}
	// B is exactly as it was; the foreign schema too; A's schema is gone.
	require.Equal(t, before, b.tenantState("cat-b", "s_cat_b"))
	var legacy, aSchema int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM legacy.accounts), (SELECT count(*) FROM pg_namespace WHERE nspname = 's_cat_a')`).Scan(&legacy, &aSchema))
	require.Equal(t, 1, legacy)
	require.Zero(t, aSchema, "A's own deletion dropped A's schema")
	// No export file was written.
	require.NoFileExists(t, filepath.Join(b.root, "s_cat_a", "stolen.ndjson"))
	// Webhooks: wf's own lifecycle events only (the registry's, and the
	// catalog.dropped of A's drop); neither what a client sent nor the
	// catalog.deleted written straight to the outbox, which the registry
	// has no record of.
	require.ElementsMatch(t, []string{"catalog.created cat-a", "catalog.created cat-b", "catalog.deleted cat-a", "catalog.dropped cat-a"},
		rc.deliveries())
	var refused int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'event_dispatch' AND status = 'FAILED'
		AND error LIKE '%the registry has no record of the deletion of catalog "cat-b"%'`).Scan(&refused))
	require.Equal(t, 1, refused, "the forged catalog.deleted was refused, in words")
}

// TestTenantDedup: dedup keys are per tenant. A tenant that reuses another's
// key gets a task (or event) of its own, and a deduplicated answer never
// shows another tenant's task or event.
func TestTenantDedup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a")
	b.createCatalog("cat-b")

	resB := b.do("POST", "/tasks", tokClientB, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_b", "inputs": map[string]any{"name": "secret"}})
	require.Equal(t, http.StatusAccepted, resB.status, string(resB.body))
	taskB := resB.json(t)
	evB := b.do("POST", "/events", tokClientB, map[string]any{"event_type": "survey.updated", "schema_name": "s_cat_b",
		"payload": map[string]any{"private": "b"}, "dedup_key": "secret"})
	require.Equal(t, http.StatusAccepted, evB.status, string(evB.body))

	resA := b.do("POST", "/tasks", tokClientLimited, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_a", "inputs": map[string]any{"name": "secret"}})
	require.Equal(t, http.StatusAccepted, resA.status, "the same key in another tenant is not a duplicate: %s", resA.body)
	taskA := resA.json(t)
	require.Equal(t, false, taskA["deduplicated"])
	require.NotEqual(t, taskB["task_id"], taskA["task_id"])
	require.NotContains(t, string(resA.body), taskB["task_id"].(string))

	evA := b.do("POST", "/events", tokClientLimited, map[string]any{"event_type": "survey.updated", "schema_name": "s_cat_a", "dedup_key": "secret"})
	require.Equal(t, http.StatusAccepted, evA.status, string(evA.body))
	require.Equal(t, false, evA.json(t)["deduplicated"])
	require.NotContains(t, string(evA.body), "private")

	// Within a tenant, dedup holds as before.
	again := b.do("POST", "/tasks", tokClientB, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_b", "inputs": map[string]any{"name": "secret"}})
	require.Equal(t, http.StatusOK, again.status, string(again.body))
	require.Equal(t, taskB["task_id"], again.json(t)["task_id"])
	require.Equal(t, true, again.json(t)["deduplicated"])

	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'tenant_job'`).Scan(&n))
	require.Equal(t, 2, n)
}

// ingestUntilError submits an ingestion into cat-a/regions as client-a and
// waits until its task records an error; it returns the status URL and
// the task.
func (b *bundle) ingestUntilError(body map[string]any) (string, map[string]any) {
	b.t.Helper()
	res := b.do("POST", "/ingestion/cat-a/regions", tokClientLimited, body)
	require.Equal(b.t, http.StatusAccepted, res.status, string(res.body))
	statusURL := res.json(b.t)["status_url"].(string)
	var task map[string]any
	require.Eventually(b.t, func() bool {
		task = b.do("GET", statusURL, tokClientLimited, nil).json(b.t)
		return task["error"] != nil
	}, 30*time.Second, 20*time.Millisecond)
	return statusURL, task
}

// TestOutboundRefused: an ingestion source on loopback, a private network or
// the cloud metadata address is refused when the task runs, and a refused
// address, a closed port and an open one fail with the same words, so a
// task's error is no port scanner.
func TestOutboundRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startFeatureEngine(t, b, t.TempDir())
	b.createCatalog("cat-a", "regions")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	open := strings.TrimPrefix(b.http.URL, "http://") // the API itself listens here

	var words []string
	for _, addr := range []string{"169.254.169.254:80", "10.0.0.1:80", open, closed} {
		body := map[string]any{"source": "http://" + addr + "/latest/meta-data.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "A"}
		statusURL, task := b.ingestUntilError(body)
		words = append(words, strings.ReplaceAll(task["error"].(string), addr, "ADDR"))
		require.Equal(t, http.StatusOK, b.do("POST", statusURL+"/cancel", tokClientLimited, nil).status)
	}
	require.Contains(t, words[0], "the destination cannot be reached")
	for _, w := range words[1:] {
		require.Equal(t, words[0], w)
	}
}

// TestCredentialsRedacted: credentials inside a source URL (a password, a
// signed or token query parameter) are not shown: not in the task's inputs
// or error over the API (to the tenant itself, or an admin), not in its
// attempt history, not in the task.failed events; the stored inputs keep
// them, since the handler needs them.
func TestCredentialsRedacted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startFeatureEngine(t, b, t.TempDir())
	b.createCatalog("cat-a", "regions")
	// A private address: refused, so the task fails with the URL in its error.
	source := "https://alice:pa55word@10.1.2.3/a.geojson?X-Goog-Signature=5ec7e7&token=t0ken&page=2"
	body := map[string]any{"source": source, "format": "geojson", "id_attribute": "code", "asset_id": "A"}
	statusURL, _ := b.ingestUntilError(body)
	require.Equal(t, http.StatusOK, b.do("POST", statusURL+"/cancel", tokClientLimited, nil).status)
	b.idle()
	for _, tok := range []string{tokClientLimited, tokAdmin} {
		shown := string(b.do("GET", statusURL, tok, nil).body)
		list := string(b.do("GET", "/tasks?task_type=ingestion", tok, nil).body)
		for _, secret := range []string{"pa55word", "5ec7e7", "t0ken"} {
			require.NotContains(t, shown, secret)
			require.NotContains(t, list, secret)
		}
		require.Contains(t, shown, `alice:REDACTED@10.1.2.3/a.geojson?X-Goog-Signature=REDACTED\u0026token=REDACTED\u0026page=2`)
	}
	var stored, events string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT inputs->>'source' FROM tasks.tasks WHERE task_type = 'ingestion'`).Scan(&stored))
	require.Equal(t, source, stored, "the handler still has them")
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT coalesce(string_agg(payload::text, ' '), '') FROM tasks.events`).Scan(&events))
	var errs string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT coalesce(error, '') || coalesce(tasks.attempt_history(attempt_log, attempts, owner_id, started_at, finished_at, status, error)::text, '')
		FROM tasks.tasks WHERE task_type = 'ingestion'`).Scan(&errs))
	for _, secret := range []string{"pa55word", "5ec7e7", "t0ken"} {
		require.NotContains(t, events, secret)
		require.NotContains(t, errs, secret, "the stored error and attempt history hold no credentials")
	}
}
