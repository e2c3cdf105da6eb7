package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
)

func TestTasksCreateGetList(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)

	// A system task, and tenant tasks in two catalogs.
	res := b.do("POST", "/tasks", tokClient, map[string]any{"task_type": "noop"})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	sysID := res.json(t)["task_id"].(string)
	res = b.do("POST", "/tasks", tokClientLimited, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_a", "inputs": map[string]any{"n": 1, "name": "one"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	aID := res.json(t)["task_id"].(string)
	require.Equal(t, "/tasks/"+aID, res.header.Get("Location"))
	res = b.do("POST", "/tasks", tokAdmin, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_b", "priority": 5})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	bID := res.json(t)["task_id"].(string)

	// Dedup: same key → the live task.
	b.unchanged(func() {
		res = b.do("POST", "/tasks", tokClientLimited, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_a", "inputs": map[string]any{"name": "one"}})
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, aID, res.json(t)["task_id"])
		require.Equal(t, true, res.json(t)["deduplicated"])
	})

	// Get: everything a client needs to follow it.
	task := b.do("GET", "/tasks/"+aID, tokClientLimited, nil).json(t)
	require.Equal(t, "PENDING", task["status"])
	require.Equal(t, map[string]any{"n": float64(1), "name": "one"}, task["inputs"])
	require.Equal(t, float64(0), task["attempts"])
	require.Nil(t, task["owner_id"])
	_, err := time.Parse(time.RFC3339Nano, task["created_at"].(string))
	require.NoError(t, err)

	// Tenant isolation: the limited client sees its catalog's task only.
	for _, id := range []string{sysID, bID} {
		res = b.do("GET", "/tasks/"+id, tokClientLimited, nil)
		require.Equal(t, http.StatusNotFound, res.status)
		require.Equal(t, "no task "+id, res.json(t)["detail"])
		res = b.do("POST", "/tasks/"+id+"/cancel", tokClientLimited, nil)
		require.Equal(t, http.StatusNotFound, res.status)
	}
	list := b.do("GET", "/tasks", tokClientLimited, nil).json(t)["items"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, aID, list[0].(map[string]any)["task_id"])
	list = b.do("GET", "/tasks?schema_name=s_cat_b", tokClientLimited, nil).json(t)["items"].([]any)
	require.Empty(t, list)

	// Filters and keyset pagination (newest first).
	all := b.do("GET", "/tasks", tokAdmin, nil).json(t)["items"].([]any)
	require.Len(t, all, 3)
	require.Equal(t, bID, all[0].(map[string]any)["task_id"])
	list = b.do("GET", "/tasks?task_type=tenant_job&status=PENDING,ACTIVE", tokAdmin, nil).json(t)["items"].([]any)
	require.Len(t, list, 2)
	list = b.do("GET", "/tasks?schema_name=system", tokWorker, nil).json(t)["items"].([]any)
	require.Len(t, list, 1)
	future := url.QueryEscape(clock.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	list = b.do("GET", "/tasks?created_from="+future, tokAdmin, nil).json(t)["items"].([]any)
	require.Empty(t, list)
	var seen []string
	cursor := ""
	for range 4 {
		q := "/tasks?limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		page := b.do("GET", q, tokAdmin, nil).json(t)
		for _, it := range page["items"].([]any) {
			seen = append(seen, it.(map[string]any)["task_id"].(string))
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, []string{bID, aID, sysID}, seen)

	// Cancel, then cancelling again conflicts.
	res = b.do("POST", "/tasks/"+aID+"/cancel", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "CANCELLED", res.json(t)["status"])
	b.unchanged(func() {
		res = b.do("POST", "/tasks/"+aID+"/cancel", tokClientLimited, nil)
		require.Equal(t, http.StatusConflict, res.status)
	})
}

func TestTasksSynchronous(t *testing.T) {
	t.Parallel()
	b := setup(t)

	res := b.do("POST", "/tasks", tokClient, map[string]any{"task_type": "echo_sync", "inputs": map[string]any{"word": "hi"}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	sub := res.json(t)
	require.Equal(t, "COMPLETED", sub["status"])
	require.Equal(t, map[string]any{"word": "hi"}, sub["outputs"])
	require.Equal(t, false, sub["deduplicated"])

	// The run is in the history: claimed by this instance, finished.
	task := b.do("GET", sub["status_url"].(string), tokAdmin, nil).json(t)
	require.Equal(t, "COMPLETED", task["status"])
	require.Equal(t, "api-test", task["owner_id"])
	require.Equal(t, float64(1), task["attempts"])
	require.NotEmpty(t, task["finished_at"])

	// A failing synchronous run is FAILED at once (its caller saw it), with a task.failed event.
	res = b.do("POST", "/tasks", tokClient, map[string]any{"task_type": "echo_sync", "inputs": map[string]any{"fail": true}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	sub = res.json(t)
	require.Equal(t, "FAILED", sub["status"])
	require.Contains(t, sub["error"], "echo asked to fail")
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.events WHERE event_type = 'task.failed'`).Scan(&n))
	require.Equal(t, 1, n)
}

func TestTasksBadInput(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	res := b.do("POST", "/tasks", tokAdmin, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_b"})
	require.Equal(t, http.StatusAccepted, res.status)
	otherTenant := res.json(t)["task_id"].(string)

	cases := []requestCase{
		{"MalformedJSON", "POST", "/tasks", tokClient, `{"task_type": noop}`, 400, nil},
		{"UnknownField", "POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "when": "now"}, 400, []string{"/when"}},
		{"WrongType", "POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "priority": "high"}, 400, []string{"/priority"}},
		{"PriorityRange", "POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "priority": 1 << 20}, 400, []string{"/priority"}},
		{"MissingType", "POST", "/tasks", tokClient, map[string]any{"inputs": map[string]any{}}, 400, []string{"/task_type"}},
		{"UnknownType", "POST", "/tasks", tokClient, map[string]any{"task_type": "nope"}, 400, []string{"/task_type"}},
		{"SQLInType", "POST", "/tasks", tokClient, map[string]any{"task_type": "noop'; DELETE FROM tasks.tasks; --"}, 400, []string{"/task_type"}},
		{"InputsNotObject", "POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "inputs": []int{1}}, 400, []string{"/inputs"}},
		{"InputSchema", "POST", "/tasks", tokClient, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_a", "inputs": map[string]any{"n": -1, "name": "far too long", "x": 1}}, 400, []string{"/inputs/n", "/inputs/name", "/inputs/x"}},
		{"NeedsTenant", "POST", "/tasks", tokClient, map[string]any{"task_type": "tenant_job"}, 400, nil},
		{"UnknownTenant", "POST", "/tasks", tokClient, map[string]any{"task_type": "tenant_job", "schema_name": "s_nope"}, 404, nil},
		{"SQLInTenant", "POST", "/tasks", tokClient, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_a' OR '1'='1"}, 404, nil},
		{"OtherTenant", "POST", "/tasks", tokClientLimited, map[string]any{"task_type": "tenant_job", "schema_name": "s_cat_b"}, 404, nil},
		{"LimitedNoSystem", "POST", "/tasks", tokClientLimited, map[string]any{"task_type": "noop"}, 404, nil},
		{"LongDedupKey", "POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "dedup_key": strings.Repeat("k", 600)}, 400, nil},
		{"NoToken", "POST", "/tasks", "", map[string]any{"task_type": "noop"}, 401, nil},
		{"BadID", "GET", "/tasks/not-a-uuid", tokClient, nil, 400, nil},
		{"SQLInID", "GET", "/tasks/1'%20OR%201=1", tokClient, nil, 400, nil},
		{"UUIDv4", "GET", "/tasks/3f0b6c1e-8a1d-4c52-9d0e-2f6a3c1b7e90", tokClient, nil, 400, nil},
		{"Missing", "GET", "/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d", tokClient, nil, 404, nil},
		{"OtherTenantGet", "GET", "/tasks/" + otherTenant, tokClientLimited, nil, 404, nil},
		{"OtherTenantWorker", "GET", "/tasks/" + otherTenant, tokWorkerLimited, nil, 404, nil},
		{"BadStatus", "GET", "/tasks?status=DONE", tokClient, nil, 400, nil},
		{"BadTime", "GET", "/tasks?created_from=yesterday", tokClient, nil, 400, nil},
		{"BadCursor", "GET", "/tasks?cursor=abc", tokClient, nil, 400, nil},
		{"CatalogCursor", "GET", "/tasks?cursor=eyJrIjoiY2F0YWxvZ3MiLCJpIjoieCJ9", tokClient, nil, 400, nil},
		{"RepeatedLimit", "GET", "/tasks?limit=1&limit=2", tokClient, nil, 400, nil},
		{"UnknownQuery", "GET", "/tasks?order=asc", tokClient, nil, 400, nil},
		{"CancelMissing", "POST", "/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/cancel", tokClient, nil, 404, nil},
	}
	b.requireUnchanged(t, cases)
}

// TestTasksCreateDelayed: run_at and run_in set when a task first runs;
// bad or conflicting values answer 400 naming the field and create nothing.
func TestTasksCreateDelayed(t *testing.T) {
	t.Parallel()
	b := setup(t)

	at := "2031-05-04T03:02:01Z"
	res := b.do("POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "run_at": "2031-05-04T05:02:01+02:00"})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task := b.do("GET", "/tasks/"+res.json(t)["task_id"].(string), tokClient, nil).json(t)
	require.Equal(t, "PENDING", task["status"])
	got, err := time.Parse(time.RFC3339Nano, task["run_after"].(string))
	require.NoError(t, err)
	want, _ := time.Parse(time.RFC3339, at)
	require.True(t, want.Equal(got), "run_after %s, want %s", got, want)

	before := clock.Now()
	res = b.do("POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "run_in": "1h30m"})
	after := clock.Now()
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task = b.do("GET", "/tasks/"+res.json(t)["task_id"].(string), tokClient, nil).json(t)
	got, err = time.Parse(time.RFC3339Nano, task["run_after"].(string))
	require.NoError(t, err)
	require.False(t, got.Before(before.Add(90*time.Minute).Truncate(time.Microsecond)), "run_after %s", got)
	require.False(t, got.After(after.Add(90*time.Minute)), "run_after %s", got)

	for _, tc := range []struct {
		body    map[string]any
		pointer string
	}{
		{map[string]any{"task_type": "noop", "run_at": "tomorrow"}, "/run_at"},
		{map[string]any{"task_type": "noop", "run_in": "5 minutes"}, "/run_in"},
		{map[string]any{"task_type": "noop", "run_in": "-5m"}, "/run_in"},
		{map[string]any{"task_type": "noop", "run_in": "5m", "run_at": at}, "/run_at"},
		// A SYNCHRONOUS task runs in front of its caller: it cannot wait.
		{map[string]any{"task_type": "echo_sync", "inputs": map[string]any{"word": "x"}, "run_in": "5m"}, "/run_at"},
	} {
		b.unchanged(func() {
			res := b.do("POST", "/tasks", tokClient, tc.body)
			require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
			require.Equal(t, []string{tc.pointer}, problemPointers(t, res), string(res.body))
		})
	}
}

// TestSyncRunsKeepConcurrencyLimits: a synchronous type's concurrency.global
// and concurrency.per_instance hold for runs in front of their callers; a
// request past a limit answers 429 with Retry-After and creates nothing.
func TestSyncRunsKeepConcurrencyLimits(t *testing.T) {
	t.Parallel()
	for _, taskType := range []string{"sleep_sync_global", "sleep_sync_local"} {
		t.Run(taskType, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			count := func() int {
				var n int
				require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = $1`, taskType).Scan(&n))
				return n
			}
			first := make(chan response, 1)
			go func() {
				first <- b.do("POST", "/tasks", tokClient, map[string]any{"task_type": taskType, "inputs": map[string]any{"duration": "3s"}})
			}()
			require.Eventually(t, func() bool {
				var n int
				require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = $1 AND status = 'ACTIVE'`, taskType).Scan(&n))
				return n == 1
			}, 5*time.Second, 10*time.Millisecond)

			res := b.do("POST", "/tasks", tokClient, map[string]any{"task_type": taskType, "inputs": map[string]any{"duration": "0s"}})
			require.Equal(t, http.StatusTooManyRequests, res.status, string(res.body))
			require.Equal(t, "1", res.header.Get("Retry-After"))
			require.Equal(t, "urn:wf:problem:busy", res.json(t)["type"])
			require.Equal(t, 1, count(), "the refused request created nothing")

			res = <-first
			require.Equal(t, http.StatusOK, res.status, string(res.body))
			require.Equal(t, "COMPLETED", res.json(t)["status"])
			res = b.do("POST", "/tasks", tokClient, map[string]any{"task_type": taskType, "inputs": map[string]any{"duration": "0s"}})
			require.Equal(t, http.StatusOK, res.status, fmt.Sprintf("room again once the first run ended: %s", res.body))
			require.Equal(t, 2, count())
		})
	}
}

// TestSyncRunsKeepTenantLimits: a synchronous type's concurrency.per_tenant
// and rate_limit hold for runs in front of their callers, per tenant: a
// request past a limit answers 429 and creates nothing, while another
// tenant with room is served; a run counts as a start of its window, and a
// request past rate_limit is told to retry when the window ends.
func TestSyncRunsKeepTenantLimits(t *testing.T) {
	t.Parallel()
	t.Run("per_tenant", func(t *testing.T) {
		t.Parallel()
		b := setupTenants(t)
		post := func(token, tenant, duration string) response {
			return b.do("POST", "/tasks", token, map[string]any{"task_type": "sleep_sync_tenant", "schema_name": tenant,
				"inputs": map[string]any{"duration": duration}})
		}
		first := make(chan response, 1)
		go func() { first <- post(tokClientLimited, "s_cat_a", "3s") }()
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE status = 'ACTIVE'`).Scan(&n))
			return n == 1
		}, 30*time.Second, 10*time.Millisecond)
		res := post(tokClientLimited, "s_cat_a", "0s")
		require.Equal(t, http.StatusTooManyRequests, res.status, string(res.body))
		require.Contains(t, res.json(t)["detail"], "concurrency.per_tenant")
		res = post(tokClientB, "s_cat_b", "0s")
		require.Equal(t, http.StatusOK, res.status, "another tenant has room: %s", res.body)
		res = <-first
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, map[string]int{"s_cat_a": 1, "s_cat_b": 1}, tasksByTenant(t, b, "sleep_sync_tenant"),
			"the refused request created nothing")
	})
	t.Run("rate_limit", func(t *testing.T) {
		t.Parallel()
		// 45 seconds before the end of an hour's window (the windows are
		// the server's clock's): a refusal's Retry-After is the rest of it.
		fake := clock.NewFake(time.Date(2031, 3, 4, 10, 59, 15, 0, time.UTC))
		b := setupTenants(t, options{clock: fake})
		post := func(token, tenant string) response {
			return b.do("POST", "/tasks", token, map[string]any{"task_type": "echo_sync_rate", "schema_name": tenant,
				"inputs": map[string]any{}})
		}
		for range 2 {
			res := post(tokClientLimited, "s_cat_a")
			require.Equal(t, http.StatusOK, res.status, string(res.body))
		}
		res := post(tokClientLimited, "s_cat_a")
		require.Equal(t, http.StatusTooManyRequests, res.status, "the tenant's 2 starts are used: %s", res.body)
		require.Contains(t, res.json(t)["detail"], "rate_limit")
		require.Equal(t, "45", res.header.Get("Retry-After"), "the rest of the hour's window, not a second")
		res = post(tokClientB, "s_cat_b")
		require.Equal(t, http.StatusOK, res.status, "another tenant's first start: %s", res.body)
		fake.Advance(5 * time.Second)
		res = post(tokClientB, "s_cat_b")
		require.Equal(t, http.StatusTooManyRequests, res.status, "the type's 3 starts are used: %s", res.body)
		require.Equal(t, "40", res.header.Get("Retry-After"))
		require.Equal(t, map[string]int{"s_cat_a": 2, "s_cat_b": 1}, tasksByTenant(t, b, "echo_sync_rate"),
			"the refused requests created nothing")

		fake.Advance(40 * time.Second)
		res = post(tokClientLimited, "s_cat_a")
		require.Equal(t, http.StatusOK, res.status, "a new window has room: %s", res.body)
	})
}

// tasksByTenant counts the tasks of taskType by tenant.
func tasksByTenant(t *testing.T, b *bundle, taskType string) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT schema_name, count(*) FROM tasks.tasks WHERE task_type = $1 GROUP BY 1`, taskType)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var tenant string
		var n int
		require.NoError(t, rows.Scan(&tenant, &n))
		out[tenant] = n
	}
	require.NoError(t, rows.Err())
	return out
}
