package api_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/reporters/dbreporter"
	"github.com/wfhq/wf/reporters/reportertest"
)

// TestTaskRecords: GET /tasks/{id}/records pages through the envelopes the
// database reporter kept, filtered by outcome, with credentials in URLs
// redacted; a token that may not see the task (another tenant's, a worker
// limited to other types) gets 404 as for a missing task, and bad
// parameters a 400.
func TestTaskRecords(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	ids := map[string]string{}
	for tok, schema := range map[string]string{tokClientLimited: "s_cat_a", tokClientB: "s_cat_b"} {
		res := b.do("POST", "/tasks", tok, map[string]any{"task_type": "tenant_job", "schema_name": schema})
		require.Equal(t, http.StatusAccepted, res.status, string(res.body))
		ids[schema] = res.json(t)["task_id"].(string)
	}
	// The real reporter writes them, as a run would.
	envs := append([]reporters.Envelope{reporters.Rejected(map[string]any{"href": "https://bob:hunter2@example.com/a.tif"}, nil, "cannot read https://bob:hunter2@example.com/a.tif")},
		reportertest.Envelopes(40)...)
	for _, id := range ids {
		r, err := dbreporter.New(b.store, uuid.MustParse(id), dbreporter.Config{KeepRecords: 3, Interval: time.Hour, Logger: quietLogger})
		require.NoError(t, err)
		require.NoError(t, reportertest.ReportConcurrently(b.ctx, r, envs, 1))
		_, err = r.Finish(b.ctx)
		require.NoError(t, err)
	}
	a := ids["s_cat_a"]

	// Every kept record, a page of 4 at a time: 3 of each outcome.
	var ns []float64
	statuses := map[string]int{}
	cursor := ""
	for range 5 {
		q := "/tasks/" + a + "/records?limit=4"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		res := b.do("GET", q, tokClientLimited, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		page := res.json(t)
		for _, it := range page["items"].([]any) {
			rec := it.(map[string]any)
			ns = append(ns, rec["n"].(float64))
			statuses[rec["status"].(string)]++
			require.Equal(t, rec["status"], rec["envelope"].(map[string]any)["status"])
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Len(t, ns, 9)
	require.IsIncreasing(t, ns)
	require.Equal(t, map[string]int{"SUCCESS": 3, "REJECTED": 3, "FAILED": 3}, statuses)

	// Refusals only; the first one's URL lost its credentials.
	res := b.do("GET", "/tasks/"+a+"/records?status=REJECTED", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	items := res.json(t)["items"].([]any)
	require.Len(t, items, 3)
	first := items[0].(map[string]any)
	require.Equal(t, float64(1), first["n"])
	require.NotContains(t, string(res.body), "hunter2")
	require.Contains(t, first["envelope"].(map[string]any)["message"], "example.com/a.tif")

	// Who may not see the task may not see its records.
	for _, c := range []struct{ id, tok string }{{ids["s_cat_b"], tokClientLimited}, {a, tokClientB}, {a, tokWorkerSleep}} {
		res = b.do("GET", "/tasks/"+c.id+"/records", c.tok, nil)
		require.Equal(t, http.StatusNotFound, res.status, string(res.body))
		require.Equal(t, "no task "+c.id, res.json(t)["detail"])
	}
	res = b.do("GET", "/tasks/"+ids["s_cat_b"]+"/records", tokClientB, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Len(t, res.json(t)["items"].([]any), 9)
	res = b.do("GET", "/tasks/"+a+"/records", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	// Bad parameters, an unknown task, no token.
	missing := uuid.Must(uuid.NewV7()).String()
	for q, want := range map[string]int{
		"/tasks/" + a + "/records?status=DONE": http.StatusBadRequest,
		"/tasks/" + a + "/records?cursor=xyz":  http.StatusBadRequest,
		"/tasks/" + a + "/records?limit=0":     http.StatusBadRequest,
		"/tasks/" + a + "/records?color=red":   http.StatusBadRequest,
		"/tasks/not-a-uuid/records":            http.StatusBadRequest,
		"/tasks/" + missing + "/records":       http.StatusNotFound,
	} {
		res = b.do("GET", q, tokAdmin, nil)
		require.Equal(t, want, res.status, "%s: %s", q, res.body)
	}
	res = b.do("GET", "/tasks/"+a+"/records", "", nil)
	require.Equal(t, http.StatusUnauthorized, res.status)
}
