package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBulkCancelRequeue: admins cancel and requeue tasks by filter, with a
// dry run that counts; a filterless call needs all: true; bad bodies and
// other roles change nothing.
func TestBulkCancelRequeue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a")
	b.createCatalog("cat-b")
	var a []string
	for range 3 {
		a = append(a, b.enqueueTenantJob("s_cat_a"))
	}
	other := b.enqueueTenantJob("s_cat_b")

	b.unchanged(func() {
		res := b.do("POST", "/admin/tasks/cancel", tokClient, map[string]any{"schema_name": []string{"s_cat_a"}})
		require.Equal(t, http.StatusForbidden, res.status)
		res = b.do("POST", "/admin/tasks/cancel", tokAdmin, map[string]any{})
		require.Equal(t, http.StatusBadRequest, res.status)
		require.Equal(t, []string{"/all"}, problemPointers(t, res))
		res = b.do("POST", "/admin/tasks/cancel", tokAdmin, map[string]any{"status": []string{"FAILED"}, "all": true})
		require.Equal(t, http.StatusBadRequest, res.status)
		res = b.do("POST", "/admin/tasks/requeue", tokAdmin, map[string]any{"status": []string{"PENDING"}, "all": true})
		require.Equal(t, http.StatusBadRequest, res.status)
		res = b.do("POST", "/admin/tasks/cancel", tokAdmin, map[string]any{"all": true, "limit": 10001})
		require.Equal(t, http.StatusBadRequest, res.status)
		res = b.do("POST", "/admin/tasks/cancel", tokAdmin, map[string]any{"all": true, "created_from": "2030-01-01T00:00:00Z", "created_to": "2029-01-01T00:00:00Z"})
		require.Equal(t, http.StatusBadRequest, res.status)
		res = b.do("POST", "/admin/tasks/cancel", tokAdmin, map[string]any{"schema_name": []string{"s_cat_a"}, "dry_run": true})
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, float64(3), res.json(t)["matched"])
		require.Equal(t, true, res.json(t)["dry_run"])
	})

	res := b.do("POST", "/admin/tasks/cancel", tokAdmin, map[string]any{"schema_name": []string{"s_cat_a"}, "limit": 2})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, float64(2), res.json(t)["cancelled"])
	require.Equal(t, true, res.json(t)["more"])
	res = b.do("POST", "/admin/tasks/cancel", tokAdmin, map[string]any{"schema_name": []string{"s_cat_a"}, "task_type": []string{"tenant_job"}})
	require.Equal(t, float64(1), res.json(t)["cancelled"])
	require.Equal(t, false, res.json(t)["more"])
	for _, id := range a {
		require.Equal(t, "CANCELLED", b.do("GET", "/tasks/"+id, tokAdmin, nil).json(t)["status"])
	}
	require.Equal(t, "PENDING", b.do("GET", "/tasks/"+other, tokAdmin, nil).json(t)["status"])

	// Requeue: DEAD_LETTER by default, so the cancelled ones need status.
	res = b.do("POST", "/admin/tasks/requeue", tokAdmin, map[string]any{"schema_name": []string{"s_cat_a"}, "dry_run": true})
	require.Equal(t, float64(0), res.json(t)["matched"])
	res = b.do("POST", "/admin/tasks/requeue", tokAdmin, map[string]any{"schema_name": []string{"s_cat_a"}, "status": []string{"CANCELLED"}, "dry_run": true})
	require.Equal(t, float64(3), res.json(t)["matched"])
	res = b.do("POST", "/admin/tasks/requeue", tokAdmin, map[string]any{"schema_name": []string{"s_cat_a"}, "status": []string{"CANCELLED"}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, float64(3), res.json(t)["requeued"])
	for _, id := range a {
		require.Equal(t, "PENDING", b.do("GET", "/tasks/"+id, tokAdmin, nil).json(t)["status"])
	}

	// The dead-letter bulk requeue has a dry run too.
	b.deadLetter(other)
	res = b.do("POST", "/admin/dead-letters/requeue", tokAdmin, map[string]any{"kind": "tasks", "dry_run": true})
	require.Equal(t, float64(1), res.json(t)["matched"])
	res = b.do("POST", "/admin/dead-letters/requeue", tokAdmin, map[string]any{"kind": "events", "dry_run": true})
	require.Equal(t, float64(0), res.json(t)["matched"])
	require.Equal(t, "DEAD_LETTER", b.do("GET", "/tasks/"+other, tokAdmin, nil).json(t)["status"])
}
