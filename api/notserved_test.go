package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/engine/store"
)

// TestNotServedWarning: POST /tasks creates a task of a type no live
// instance serves all the same, and says so in the Wf-Warning header while
// some instance runs (none warns when none runs: the worker may start
// later); the task shows waiting_reason not_served, and GET /stats counts
// it held for that reason, for the tenants the token sees only. Once an
// instance serves the type, neither says so.
func TestNotServedWarning(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	serve := func(owner string, types ...string) {
		cc := b.pool.Config().ConnConfig.Copy()
		cc.RuntimeParams["application_name"] = "wf-serves:wf:" + owner
		conn, err := pgx.ConnectConfig(b.ctx, cc)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		require.NoError(t, store.New(conn).HoldServedTypes(b.ctx, types, nil))
	}

	res := b.do("POST", "/tasks", tokClient, map[string]any{"task_type": "noop"})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Empty(t, res.header.Get(api.WarningHeader), "no instance runs")
	require.Equal(t, "not_served", b.do("GET", "/tasks/"+res.json(t)["task_id"].(string), tokClient, nil).json(t)["waiting_reason"])

	serve("other", "noop")
	res = b.do("POST", "/tasks", tokClientLimited, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_a", "inputs": map[string]any{"n": 1, "name": "a"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Equal(t, "not_served: no running wf instance serves task type tenant_job; the task waits until one whose specs have it runs, or the running ones reload their specs (wf reload)",
		res.header.Get(api.WarningHeader))
	id := res.json(t)["task_id"].(string)
	require.Equal(t, "not_served", b.do("GET", "/tasks/"+id, tokClientLimited, nil).json(t)["waiting_reason"])
	res = b.do("POST", "/tasks", tokAdmin, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_b", "inputs": map[string]any{"n": 1, "name": "b"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))

	_, err := b.store.RefreshPendingSnapshot(b.ctx, nil)
	require.NoError(t, err)
	held := func(token string) []any {
		t.Helper()
		var out []any
		for _, h := range b.do("GET", "/stats", token, nil).json(t)["held"].([]any) {
			if h.(map[string]any)["reason"] == "not_served" {
				out = append(out, h)
			}
		}
		return out
	}
	require.Equal(t, []any{map[string]any{"reason": "not_served", "task_type": "tenant_job", "schema_name": "s_cat_a", "count": float64(1)}},
		held(tokClientLimited), "the limited token sees its catalog's only")
	require.Len(t, held(tokAdmin), 2)

	// An instance that serves the type (its served-types connection).
	serve("test", "tenant_job")
	res = b.do("POST", "/tasks", tokClientLimited, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_a", "inputs": map[string]any{"n": 1, "name": "c"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	require.Empty(t, res.header.Get(api.WarningHeader))
	require.NotContains(t, b.do("GET", "/tasks/"+id, tokClientLimited, nil).json(t), "waiting_reason")
	require.Empty(t, held(tokAdmin))
}
