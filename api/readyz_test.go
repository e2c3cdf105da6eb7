package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/internal/dbmigrate"
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
