package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// signIn exchanges a token for a dashboard session and returns the cookie
// header value and the CSRF token.
func (b *bundle) signIn(token string) (cookie, csrf string) {
	b.t.Helper()
	res := b.do("POST", "/ui/session", "", map[string]any{"token": token})
	require.Equal(b.t, http.StatusCreated, res.status, string(res.body))
	set := res.header.Get("Set-Cookie")
	require.Contains(b.t, set, "HttpOnly")
	require.Contains(b.t, set, "SameSite=Strict")
	require.Contains(b.t, set, "Path=/")
	cookie, _, _ = strings.Cut(set, ";")
	csrf = res.json(b.t)["csrf_token"].(string)
	require.NotEmpty(b.t, csrf)
	return cookie, csrf
}

// withSession sends a request with a session cookie and, when csrf is not
// empty, the CSRF header.
func (b *bundle) withSession(method, path, cookie, csrf string, body any) response {
	b.t.Helper()
	h := http.Header{"Cookie": {cookie}}
	if csrf != "" {
		h.Set("X-CSRF-Token", csrf)
	}
	return b.doHeaders(method, path, "", body, h)
}

// deadLetter moves a task to DEAD_LETTER, as the engine does when its
// retries run out (a fixture: the engine's own path is tested in dispatch).
func (b *bundle) deadLetter(id string) {
	b.t.Helper()
	_, err := b.pool.Exec(b.ctx, `UPDATE tasks.tasks SET status = 'DEAD_LETTER', finished_at = now(), error = 'out of retries'
WHERE task_id = $1`, id)
	require.NoError(b.t, err)
}

func TestDashboardSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a")
	id := b.enqueueTenantJob("s_cat_a")

	// Nobody signed in: 200 with signed_in false, so the page can ask.
	res := b.do("GET", "/ui/session", "", nil)
	require.Equal(t, http.StatusOK, res.status)
	require.Equal(t, false, res.json(t)["signed_in"])

	// A wrong token is refused and creates no session.
	b.unchanged(func() {
		res := b.do("POST", "/ui/session", "", map[string]any{"token": "not-a-token"})
		require.Equal(t, http.StatusUnauthorized, res.status)
		require.Empty(t, res.header.Get("Set-Cookie"))
	})

	cookie, csrf := b.signIn(tokAdmin)
	res = b.withSession("GET", "/ui/session", cookie, "", nil)
	require.Equal(t, http.StatusOK, res.status)
	me := res.json(t)
	require.Equal(t, "admin", me["name"])
	require.Equal(t, csrf, me["csrf_token"])

	// The cookie authenticates the API's reads.
	res = b.withSession("GET", "/tasks/"+id, cookie, "", nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	// An action without the CSRF token, or with a wrong one, or from
	// another site, is refused and changes nothing.
	b.unchanged(func() {
		res := b.withSession("POST", "/tasks/"+id+"/cancel", cookie, "", nil)
		require.Equal(t, http.StatusForbidden, res.status)
		res = b.withSession("POST", "/tasks/"+id+"/cancel", cookie, csrf+"x", nil)
		require.Equal(t, http.StatusForbidden, res.status)
		res = b.doHeaders("POST", "/tasks/"+id+"/cancel", "", nil,
			http.Header{"Cookie": {cookie}, "X-Csrf-Token": {csrf}, "Sec-Fetch-Site": {"cross-site"}})
		require.Equal(t, http.StatusForbidden, res.status)
	})
	res = b.withSession("POST", "/tasks/"+id+"/cancel", cookie, csrf, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "CANCELLED", res.json(t)["status"])

	// Signing out ends the session on the server, not only in the browser.
	res = b.withSession("DELETE", "/ui/session", cookie, csrf, nil)
	require.Equal(t, http.StatusNoContent, res.status)
	res = b.withSession("GET", "/tasks/"+id, cookie, "", nil)
	require.Equal(t, http.StatusUnauthorized, res.status)

	// A session of a non-admin token reads but does not act, even with the
	// CSRF token (the API would let the same token cancel by bearer).
	id2 := b.enqueueTenantJob("s_cat_a")
	cookie, csrf = b.signIn(tokClient)
	b.unchanged(func() {
		res := b.withSession("POST", "/tasks/"+id2+"/cancel", cookie, csrf, nil)
		require.Equal(t, http.StatusForbidden, res.status, string(res.body))
	})
	res = b.withSession("GET", "/tasks/"+id2, cookie, "", nil)
	require.Equal(t, http.StatusOK, res.status)
	// It may still sign out.
	res = b.withSession("DELETE", "/ui/session", cookie, csrf, nil)
	require.Equal(t, http.StatusNoContent, res.status)
}

func TestDashboardSessionEndsWithItsToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cookie, _ := b.signIn(tokAdmin)
	// The stored token hash no longer matches (as after a rotation).
	_, err := b.pool.Exec(b.ctx, `UPDATE tasks.ui_sessions SET token_sha256 = repeat('0', 64)`)
	require.NoError(t, err)
	res := b.withSession("GET", "/tasks", cookie, "", nil)
	require.Equal(t, http.StatusUnauthorized, res.status)
	// An expired session is refused too.
	cookie, _ = b.signIn(tokAdmin)
	_, err = b.pool.Exec(b.ctx, `UPDATE tasks.ui_sessions SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
	res = b.withSession("GET", "/tasks", cookie, "", nil)
	require.Equal(t, http.StatusUnauthorized, res.status)
}

func TestStatsCountsAndTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a")
	b.createCatalog("cat-b")
	for range 3 {
		b.enqueueTenantJob("s_cat_a")
	}
	dead := b.enqueueTenantJob("s_cat_b")
	b.enqueueTenantJob("s_cat_b")
	b.deadLetter(dead)

	counts := func(token string) map[string]float64 {
		res := b.do("GET", "/stats", token, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		out := map[string]float64{}
		for _, c := range res.json(t)["counts"].([]any) {
			m := c.(map[string]any)
			out[m["status"].(string)+" "+m["task_type"].(string)+" "+m["schema_name"].(string)] += m["count"].(float64)
		}
		return out
	}
	all := counts(tokAdmin)
	// The counts match the table.
	var pendingA, pendingB, deadB int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT
  count(*) FILTER (WHERE status = 'PENDING' AND schema_name = 's_cat_a'),
  count(*) FILTER (WHERE status = 'PENDING' AND schema_name = 's_cat_b'),
  count(*) FILTER (WHERE status = 'DEAD_LETTER' AND schema_name = 's_cat_b')
FROM tasks.tasks WHERE task_type = 'tenant_job'`).Scan(&pendingA, &pendingB, &deadB))
	require.Equal(t, 3, pendingA)
	require.Equal(t, float64(pendingA), all["PENDING tenant_job s_cat_a"])
	require.Equal(t, float64(pendingB), all["PENDING tenant_job s_cat_b"])
	require.Equal(t, float64(deadB), all["DEAD_LETTER tenant_job s_cat_b"])

	// A token limited to cat-a sees cat-a's tasks only, by bearer and by
	// session, and nothing that spans tenants.
	limited := counts(tokClientLimited)
	require.Equal(t, map[string]float64{"PENDING tenant_job s_cat_a": 3}, limited)
	cookie, _ := b.signIn(tokClientLimited)
	res := b.withSession("GET", "/stats", cookie, "", nil)
	require.Equal(t, http.StatusOK, res.status)
	st := res.json(t)
	require.Len(t, st["counts"], 1)
	require.NotContains(t, st, "outbox")
	require.NotContains(t, st, "instances")
	res = b.withSession("GET", "/tasks?schema_name=s_cat_b", cookie, "", nil)
	require.Equal(t, http.StatusOK, res.status)
	require.Empty(t, res.json(t)["items"])
	res = b.withSession("GET", "/tasks/"+dead, cookie, "", nil)
	require.Equal(t, http.StatusNotFound, res.status)

	// Bad window.
	res = b.do("GET", "/stats?window=3d", tokAdmin, nil)
	require.Equal(t, http.StatusBadRequest, res.status)
}

func TestDashboardPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/ui/", "/ui/format.js", "/ui/app.js", "/ui/app.css", "/ui/ol.js", "/ui/ol.css"} {
		res, err := b.http.Client().Get(b.http.URL + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'")
	}
	res, err := b.http.Client().Get(b.http.URL + "/ui/nope.js")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

func TestTaskAttemptHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a")
	id := b.enqueueTenantJob("s_cat_a")
	require.Len(t, b.claimAs("remote-1"), 1)
	res := b.do("POST", "/tasks/"+id+"/fail", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": 1, "error": "disk full"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	task := b.do("GET", "/tasks/"+id, tokAdmin, nil).json(t)
	hist := task["attempt_history"].([]any)
	require.Len(t, hist, 1)
	a := hist[0].(map[string]any)
	require.Equal(t, float64(1), a["attempt"])
	require.Equal(t, "RETRIED", a["outcome"])
	require.Equal(t, "disk full", a["error"])
	require.Equal(t, "remote-1", a["owner_id"])
	require.NotEmpty(t, a["started_at"])
	require.NotEmpty(t, a["finished_at"])

	// Clients see the history without instance names.
	a = b.do("GET", "/tasks/"+id, tokClientLimited, nil).json(t)["attempt_history"].([]any)[0].(map[string]any)
	require.NotContains(t, a, "owner_id")
	require.Equal(t, "disk full", a["error"])
}
