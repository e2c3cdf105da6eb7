package api_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbmigrate"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/secretbox"
)

func TestOperations(t *testing.T) {
	t.Parallel()
	b := setup(t)

	b.parallel(t, "Healthz", func(t *testing.T, b *bundle) {
		res := b.do("GET", "/healthz", "", nil)
		require.Equal(t, http.StatusOK, res.status)
		require.Equal(t, "ok", res.json(t)["status"])
		require.Equal(t, runtime.Version(), res.json(t)["go_version"]) // and version, commit: checked by the contract
	})

	b.parallel(t, "Readyz", func(t *testing.T, b *bundle) {
		res := b.do("GET", "/readyz", "", nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		m := res.json(t)
		require.Equal(t, "ready", m["status"])
		mig := m["migrations"].(map[string]any)
		require.Equal(t, mig["latest"], mig["current"])
	})

	b.parallel(t, "OpenAPI", func(t *testing.T, b *bundle) {
		res := b.do("GET", "/openapi.json", "", nil)
		require.Equal(t, http.StatusOK, res.status)
		require.Equal(t, "3.1.0", res.json(t)["openapi"])
	})

	b.parallel(t, "UnknownRoute", func(t *testing.T, b *bundle) {
		res := b.do("GET", "/nope", tokAdmin, nil)
		require.Equal(t, http.StatusNotFound, res.status)
		res = b.do("GET", "/tasks/", tokAdmin, nil)
		require.Equal(t, http.StatusNotFound, res.status)
	})

	b.parallel(t, "MethodNotAllowed", func(t *testing.T, b *bundle) {
		res := b.do("PUT", "/tasks", tokAdmin, nil)
		require.Equal(t, http.StatusMethodNotAllowed, res.status)
		require.Contains(t, res.header.Get("Allow"), "POST")
	})

	b.parallel(t, "PathTraversal", func(t *testing.T, b *bundle) {
		b.unchanged(func() {
			for _, p := range []string{
				"/ingestion/../admin/dead-letters",
				"/ingestion/a/..%2f..%2fadmin",
				"/tasks/%2e%2e/admin",
				"/catalogs/a%2Fb",
				"/catalogs//x",
				"/catalogs/./x",
				"/catalogs/x%5c..%5cy",
			} {
				res := b.do("GET", p, tokAdmin, nil)
				require.Equal(t, http.StatusBadRequest, res.status, p)
				require.Contains(t, string(res.body), "canonical", p)
			}
		})
	})

	b.parallel(t, "Auth", func(t *testing.T, b *bundle) {
		b.unchanged(func() {
			res := b.do("GET", "/tasks", "", nil)
			require.Equal(t, http.StatusUnauthorized, res.status)
			require.Contains(t, res.header.Get("WWW-Authenticate"), "Bearer")

			res = b.do("GET", "/tasks", "not-a-token", nil)
			require.Equal(t, http.StatusUnauthorized, res.status)
			require.Contains(t, res.header.Get("WWW-Authenticate"), "invalid_token")

			res = b.doHeaders("GET", "/tasks", "", nil, http.Header{"Authorization": {"Basic " + tokAdmin}})
			require.Equal(t, http.StatusUnauthorized, res.status)

			// Lower-case scheme is accepted (RFC 9110 schemes are case-insensitive).
			res = b.doHeaders("GET", "/tasks", "", nil, http.Header{"Authorization": {"bearer " + tokAdmin}})
			require.Equal(t, http.StatusOK, res.status)

			for _, tok := range []string{tokClient, tokClientLimited, tokWorker} {
				res = b.do("GET", "/admin/dead-letters", tok, nil)
				require.Equal(t, http.StatusForbidden, res.status)
				res = b.do("POST", "/admin/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/requeue", tok, nil)
				require.Equal(t, http.StatusForbidden, res.status)
			}
			// Workers may not create; clients may not report as workers.
			res = b.do("POST", "/tasks", tokWorker, map[string]any{"task_type": "noop"})
			require.Equal(t, http.StatusForbidden, res.status)
			res = b.do("POST", "/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/complete", tokClient, map[string]any{"owner_id": "x"})
			require.Equal(t, http.StatusForbidden, res.status)
			res = b.do("POST", "/catalogs", tokWorker, map[string]any{"catalog_id": "w"})
			require.Equal(t, http.StatusForbidden, res.status)
		})
	})

	b.parallel(t, "OversizeHeaderlessBody", func(t *testing.T, b *bundle) {
		b.unchanged(func() {
			res := b.do("POST", "/catalogs", tokAdmin, `{"catalog_id": "x", "title": "`+strings.Repeat("a", 2<<20)+`"}`)
			require.Equal(t, http.StatusRequestEntityTooLarge, res.status)
		})
	})
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Some live tasks for the depth gauge.
	b.createCatalog("metrics-cat", "roads")
	for range 3 {
		res := b.do("POST", "/tasks", tokAdmin, map[string]any{"task_type": "noop"})
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	}
	// A webhook subscriber whose secret is sealed under a key this wf does
	// not have: counted, since the fan-out skips it.
	lost, err := secretbox.Parse("k9:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("9", 32))))
	require.NoError(t, err)
	_, err = store.New(b.pool).WithSecrets(lost).InsertWebhookSubscriber(b.ctx, store.NewWebhookSubscriber{
		URL: "https://hooks.example.com/x", Secret: "a-secret-under-a-lost-key", EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)
	res := b.do("GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, res.status)
	text := string(res.body)
	require.Contains(t, text, `wf_queue_depth{schema_name="system",status="PENDING",task_type="noop"} 3`)
	require.Contains(t, text, `wf_queue_depth{schema_name="system",status="ACTIVE",task_type="noop"} 0`)
	require.Contains(t, text, `wf_queue_depth_up 1`)
	require.Contains(t, text, `wf_leader 1`)
	require.Contains(t, text, `wf_outbox_events{status="PENDING"}`)
	require.Contains(t, text, "\nwf_webhook_secrets_unreadable 1\n")
	require.Contains(t, text, `wf_build_info{`)
	require.Contains(t, text, `wf_http_requests_total{code="202",route="POST /tasks"}`)
	require.Contains(t, text, "go_goroutines")
	require.Regexp(t, `(?m)^wf_build_info\{goversion="go[^"]+",revision="[^"]+",version="[^"]+"\} 1$`, text)
}

// TestReadyzNotReady checks the two ways /readyz answers 503: the schema is
// behind the binary's migrations, and the database cannot be reached; in
// the second case every other call answers 503 with Retry-After too.
func TestReadyzNotReady(t *testing.T) {
	t.Parallel()

	t.Run("MigrationsBehind", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.pool.Exec(b.ctx, "UPDATE "+dbmigrate.VersionTable+" SET version = version - 1")
		require.NoError(t, err)
		res := b.do("GET", "/readyz", "", nil)
		require.Equal(t, http.StatusServiceUnavailable, res.status, string(res.body))
		require.Equal(t, "5", res.header.Get("Retry-After"))
		m := res.json(t)
		require.Contains(t, m["detail"], "run wf migrate up")

		_, err = b.pool.Exec(b.ctx, "UPDATE "+dbmigrate.VersionTable+" SET version = version + 1")
		require.NoError(t, err)
		res = b.do("GET", "/readyz", "", nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
	})

	t.Run("DatabaseUnreachable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Nothing listens on port 1 of loopback: every connection fails at once.
		pool, err := pgxpool.New(b.ctx, "postgres://wf@127.0.0.1:1/wf?connect_timeout=2")
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		tokens := []config.Token{{Name: "client", Role: config.RoleClient, TokenSHA256: config.HashToken(tokClient)}}
		srv, err := api.New(api.Config{Pool: pool, Specs: b.specs, Tokens: tokens, Owner: "api-test", Logger: quietLogger})
		require.NoError(t, err)
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		b.http = hs
		res := b.do("GET", "/readyz", "", nil)
		require.Equal(t, http.StatusServiceUnavailable, res.status, string(res.body))
		require.Contains(t, res.json(t)["detail"], "not reachable")
		for _, call := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/tasks", map[string]any{"task_type": "noop"}},
			{"GET", "/tasks", nil},
			{"POST", "/events", map[string]any{"event_type": "test.happened", "payload": map[string]any{}}},
		} {
			res = b.do(call.method, call.path, tokClient, call.body)
			require.Equal(t, http.StatusServiceUnavailable, res.status, "%s %s: %s", call.method, call.path, res.body)
			require.Equal(t, "5", res.header.Get("Retry-After"))
			require.Contains(t, res.json(t)["detail"], "nothing was changed")
		}
		res = b.do("GET", "/healthz", "", nil)
		require.Equal(t, http.StatusOK, res.status, "liveness does not depend on the database")
	})
}

// TestReadyzChecksTheCatalogDatabase runs the API over two real databases,
// the queue's and the catalog's (catalog.database_url), each migrated with
// its part: /readyz answers 200 and reports both; the catalog's database
// behind the migrations, or unreachable, makes it 503 naming that
// database, as the queue's would.
func TestReadyzChecksTheCatalogDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t) // specs and tokens; its own server is not used
	queue, catalog := dbtest.PoolFor(t, dbtest.NewEmptyDatabase(t)), dbtest.PoolFor(t, dbtest.NewEmptyDatabase(t))
	for pool, part := range map[*pgxpool.Pool]dbmigrate.Part{queue: dbmigrate.PartQueue, catalog: dbmigrate.PartCatalog} {
		conn, err := pool.Acquire(b.ctx)
		require.NoError(t, err)
		_, err = dbmigrate.UpPart(b.ctx, conn.Conn(), part)
		conn.Release()
		require.NoError(t, err)
	}
	serve := func(catalogPool *pgxpool.Pool) {
		t.Helper()
		srv, err := api.New(api.Config{Pool: queue, CatalogPool: catalogPool, Store: store.New(queue).WithCatalog(store.New(catalogPool)),
			Specs: b.specs, Owner: "api-test", Logger: quietLogger})
		require.NoError(t, err)
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		b.http = hs
	}
	serve(catalog)
	res := b.do("GET", "/readyz", "", nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	ready := res.json(t)
	cat := ready["catalog"].(map[string]any)
	require.Equal(t, "ok", cat["database"])
	mig := cat["migrations"].(map[string]any)
	require.Equal(t, mig["latest"], mig["current"])
	require.Equal(t, ready["migrations"].(map[string]any)["latest"], mig["latest"], "one numbering for both databases")
	require.Nil(t, ready["replica"], "no replica configured, none reported")

	// The catalog's database behind the binary's migrations: not ready.
	_, err := catalog.Exec(b.ctx, "UPDATE "+dbmigrate.VersionTable+" SET version = version - 1")
	require.NoError(t, err)
	res = b.do("GET", "/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, res.status, string(res.body))
	require.Equal(t, "5", res.header.Get("Retry-After"))
	require.Contains(t, res.json(t)["detail"], "the catalog's database (catalog.database_url)'s schema is at version")
	require.Contains(t, res.json(t)["detail"], "run wf migrate up")
	_, err = catalog.Exec(b.ctx, "UPDATE "+dbmigrate.VersionTable+" SET version = version + 1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, b.do("GET", "/readyz", "", nil).status)

	// The catalog's database unreachable (nothing listens on port 1).
	down, err := pgxpool.New(b.ctx, "postgres://wf@127.0.0.1:1/wf?connect_timeout=2")
	require.NoError(t, err)
	t.Cleanup(down.Close)
	serve(down)
	res = b.do("GET", "/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, res.status, string(res.body))
	require.Contains(t, res.json(t)["detail"], "the catalog's database (catalog.database_url) is not reachable")
}
