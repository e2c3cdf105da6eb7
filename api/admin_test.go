package api_test

import (
	"net/http"
	"net/http/httptest"
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
		b.requireAnswers(t,
			requestCase{"ClientPauses", "POST", "/admin/pauses", tokClient, map[string]any{"kind": "task_type", "name": "noop"}, http.StatusForbidden, nil},
			requestCase{"BadKind", "POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "queue", "name": "noop"}, http.StatusBadRequest, []string{"/kind"}},
			requestCase{"NoName", "POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "task_type", "name": ""}, http.StatusBadRequest, nil},
			requestCase{"UnknownType", "POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "task_type", "name": "no_such_type"}, http.StatusNotFound, nil},
			requestCase{"UnknownTenant", "POST", "/admin/pauses", tokAdmin, map[string]any{"kind": "tenant", "name": "s_no_such"}, http.StatusNotFound, nil},
			requestCase{"ResumeUnpaused", "DELETE", "/admin/pauses/task_type/noop", tokAdmin, nil, http.StatusNotFound, nil},
			requestCase{"ResumeBadKind", "DELETE", "/admin/pauses/queue/noop", tokAdmin, nil, http.StatusBadRequest, nil},
			requestCase{"ClientResumes", "DELETE", "/admin/pauses/task_type/noop", tokClient, nil, http.StatusForbidden, nil})
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

// tenantJobs gives b catalogs cat-a and cat-b and tenant_job tasks, three
// of s_cat_a (a) and one of s_cat_b (other), PENDING or, when dead is
// set, dead-lettered.
func tenantJobs(b *bundle, dead bool) (a []string, other string) {
	b.createCatalog("cat-a")
	b.createCatalog("cat-b")
	job := func(schema string) string {
		id := b.enqueueTenantJob(schema)
		if dead {
			b.deadLetter(id)
		}
		return id
	}
	for range 3 {
		a = append(a, job("s_cat_a"))
	}
	return a, job("s_cat_b")
}

// TestBulkCancelRequeue: admins cancel and requeue tasks by filter, with a
// dry run that counts; a filterless call needs all: true; bad bodies and
// other roles change nothing.
func TestBulkCancelRequeue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, other := tenantJobs(b, false)

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

func TestBulkRequeueDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, other := tenantJobs(b, true)

	// Only admins; a bad body changes nothing.
	b.unchanged(func() {
		b.requireAnswers(t,
			requestCase{"Client", "POST", "/admin/dead-letters/requeue", tokClient, map[string]any{"kind": "tasks"}, http.StatusForbidden, nil},
			requestCase{"BadKind", "POST", "/admin/dead-letters/requeue", tokAdmin, map[string]any{"kind": "jobs"}, http.StatusBadRequest, nil},
			requestCase{"EventFilterOnTasks", "POST", "/admin/dead-letters/requeue", tokAdmin, map[string]any{"kind": "tasks", "event_type": []string{"x"}}, http.StatusBadRequest, nil})
	})

	res := b.do("POST", "/admin/dead-letters/requeue", tokAdmin, map[string]any{
		"kind": "tasks", "task_type": []string{"tenant_job"}, "schema_name": []string{"s_cat_a"}, "limit": 2})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	out := res.json(t)
	require.Equal(t, float64(2), out["requeued"])
	require.Equal(t, true, out["more"])
	res = b.do("POST", "/admin/dead-letters/requeue", tokAdmin, map[string]any{"kind": "tasks", "schema_name": []string{"s_cat_a"}})
	require.Equal(t, float64(1), res.json(t)["requeued"])
	require.Equal(t, false, res.json(t)["more"])
	for _, id := range a {
		require.Equal(t, "PENDING", b.do("GET", "/tasks/"+id, tokAdmin, nil).json(t)["status"])
	}
	// The other tenant's dead letter stayed.
	require.Equal(t, "DEAD_LETTER", b.do("GET", "/tasks/"+other, tokAdmin, nil).json(t)["status"])

	// The webhook subscribers list never shows a secret.
	res = b.do("GET", "/admin/webhooks", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status)
}

// TestMetricsRouteLabels: a request counts under its route's pattern as a
// person reads it: GET / is "GET /", not Go's "GET /{$}".
func TestMetricsRouteLabels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// GET / redirects to the dashboard, outside the document b.do checks
	// answers against: served straight by the server's handler.
	rec := httptest.NewRecorder()
	b.server.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	require.Equal(t, http.StatusFound, rec.Code)
	metrics := string(b.do("GET", "/metrics", "", nil).body)
	require.Contains(t, metrics, `wf_http_requests_total{code="302",route="GET /"} 1`)
	require.NotContains(t, metrics, "{$}")
}
