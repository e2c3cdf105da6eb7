package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPauses: only admins pause and resume; a bad kind, an unknown task
// type or tenant change nothing; a pause shows in /stats (a limited token
// sees only its own tenants'), in /metrics and in the list, and goes away
// on resume.
func TestPauses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a")
	b.createCatalog("cat-b")

	b.unchanged(func() {
		res := b.do("POST", "/admin/pauses", tokClient, map[string]any{"kind": "task_type", "name": "noop"})
		require.Equal(t, http.StatusForbidden, res.status)
		res = b.do("POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "queue", "name": "noop"})
		require.Equal(t, http.StatusBadRequest, res.status)
		require.Equal(t, []string{"/kind"}, problemPointers(t, res))
		res = b.do("POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "task_type", "name": ""})
		require.Equal(t, http.StatusBadRequest, res.status)
		res = b.do("POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "task_type", "name": "no_such_type"})
		require.Equal(t, http.StatusNotFound, res.status)
		res = b.do("POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "tenant", "name": "s_no_such"})
		require.Equal(t, http.StatusNotFound, res.status)
		res = b.do("DELETE", "/admin/pauses/task_type/noop", tokAdmin, nil)
		require.Equal(t, http.StatusNotFound, res.status)
		res = b.do("DELETE", "/admin/pauses/queue/noop", tokAdmin, nil)
		require.Equal(t, http.StatusBadRequest, res.status)
		res = b.do("DELETE", "/admin/pauses/task_type/noop", tokClient, nil)
		require.Equal(t, http.StatusForbidden, res.status)
	})

	res := b.do("POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "task_type", "name": "noop", "reason": "disk full"})
	require.Equal(t, http.StatusCreated, res.status, string(res.body))
	p := res.json(t)
	require.Equal(t, "admin", p["paused_by"])
	require.Equal(t, "disk full", p["reason"])
	res = b.do("POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "task_type", "name": "noop"})
	require.Equal(t, http.StatusOK, res.status, "already paused: the existing pause")
	require.Equal(t, "disk full", res.json(t)["reason"])
	for _, tenant := range []string{"s_cat_a", "s_cat_b"} {
		res = b.do("POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "tenant", "name": tenant})
		require.Equal(t, http.StatusCreated, res.status, string(res.body))
	}

	res = b.do("GET", "/admin/pauses", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status)
	require.Len(t, res.json(t)["items"], 3)

	names := func(token string) []string {
		res := b.do("GET", "/stats", token, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var out []string
		for _, p := range res.json(t)["paused"].([]any) {
			out = append(out, p.(map[string]any)["name"].(string))
		}
		return out
	}
	require.Equal(t, []string{"noop", "s_cat_a", "s_cat_b"}, names(tokAdmin))
	require.Equal(t, []string{"noop", "s_cat_a"}, names(tokClientLimited), "another tenant's pause is not shown")

	res = b.do("GET", "/metrics", "", nil)
	require.Contains(t, string(res.body), `wf_paused{kind="task_type",name="noop"} 1`)
	require.Contains(t, string(res.body), `wf_paused{kind="tenant",name="s_cat_b"} 1`)

	res = b.do("DELETE", "/admin/pauses/task_type/noop", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = b.do("DELETE", "/admin/pauses/tenant/s_cat_b", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, []string{"s_cat_a"}, names(tokAdmin))
}
