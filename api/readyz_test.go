package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbmigrate"
	"github.com/wfhq/wf/internal/dbtest"
)

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
