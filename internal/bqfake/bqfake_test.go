package bqfake_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/bqfake"
)

// call sends one request to the fake as any REST client would and
// decodes the JSON answer.
func call(t *testing.T, s *bqfake.Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "application/json; charset=UTF-8", res.Header.Get("Content-Type"))
	var out map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return res.StatusCode, out
}

func newServer(t *testing.T) *bqfake.Server {
	s := bqfake.New()
	t.Cleanup(s.Close)
	at := time.Date(2024, 3, 1, 10, 0, 0, 500000000, time.UTC)
	s.AddTable("p", "d", "t", []bqfake.Field{{Name: "k", Type: "INTEGER"}, {Name: "at", Type: "TIMESTAMP"},
		{Name: "tags", Type: "STRING", Mode: "REPEATED"},
		{Name: "rec", Type: "RECORD", Fields: []bqfake.Field{{Name: "a", Type: "INTEGER"}, {Name: "b", Type: "FLOAT"}}}},
		[][]any{{int64(10), at, []any{"x", "y"}, []any{int64(1), 2.5}}, {nil, nil, nil, nil}, {int64(2), nil, []any{}, nil}, {int64(7), nil, nil, nil}})
	return s
}

const query = "SELECT `k`, `at`, `tags`, `rec` FROM `p.d.t` WHERE `k` IS NOT NULL ORDER BY `k`"

// TestQueryPagesAndShapes: jobs.query's first page is as long as the
// body's maxResults, later pages come from jobs.getQueryResults by
// pageToken, rows are in BigQuery's REST shapes, TIMESTAMP in either
// format the request asks.
func TestQueryPagesAndShapes(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	status, res := call(t, s, "POST", "/bigquery/v2/projects/p/queries", map[string]any{"query": query, "useLegacySql": false,
		"maxResults": 1, "formatOptions": map[string]any{"useInt64Timestamp": true}})
	require.Equal(t, http.StatusOK, status, res)
	require.Equal(t, "bigquery#queryResponse", res["kind"])
	require.Equal(t, true, res["jobComplete"])
	require.Equal(t, "3", res["totalRows"], "the null key is not selected")
	require.Equal(t, []any{map[string]any{"f": []any{map[string]any{"v": "2"}, map[string]any{"v": nil}, map[string]any{"v": []any{}}, map[string]any{"v": nil}}}}, res["rows"])
	token := res["pageToken"].(string)
	require.NotEmpty(t, token)
	job := res["jobReference"].(map[string]any)["jobId"].(string)

	status, res = call(t, s, "GET", "/bigquery/v2/projects/p/queries/"+job+"?maxResults=5&pageToken="+token, nil)
	require.Equal(t, http.StatusOK, status, res)
	rows := res["rows"].([]any)
	require.Len(t, rows, 2)
	require.Empty(t, res["pageToken"], "the last page")
	require.Equal(t, map[string]any{"f": []any{map[string]any{"v": "10"}, map[string]any{"v": "1.7092872005E9"},
		map[string]any{"v": []any{map[string]any{"v": "x"}, map[string]any{"v": "y"}}},
		map[string]any{"v": map[string]any{"f": []any{map[string]any{"v": "1"}, map[string]any{"v": "2.5"}}}}}}, rows[1],
		"float seconds by default; a REPEATED value a list of {v}; a RECORD {f}")

	status, res = call(t, s, "GET", "/bigquery/v2/projects/p/queries/"+job+"?startIndex=2&formatOptions.useInt64Timestamp=true", nil)
	require.Equal(t, http.StatusOK, status, res)
	require.Equal(t, map[string]any{"v": "1709287200500000"}, res["rows"].([]any)[0].(map[string]any)["f"].([]any)[1], "integer microseconds when asked")

	// tabledata.list reads the table itself, nulls included.
	status, res = call(t, s, "GET", "/bigquery/v2/projects/p/datasets/d/tables/t/data?maxResults=10", nil)
	require.Equal(t, http.StatusOK, status, res)
	require.Equal(t, "bigquery#tableDataList", res["kind"])
	require.Len(t, res["rows"], 4)
}

// TestJobsAndRequestID: a slow query is RUNNING until polled through;
// a jobs.query repeated with its requestId answers the same job.
func TestJobsAndRequestID(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.SlowQueries(2)
	_, res := call(t, s, "POST", "/projects/p/jobs", map[string]any{"configuration": map[string]any{"query": map[string]any{"query": query, "useLegacySql": false}}})
	require.Equal(t, "bigquery#job", res["kind"])
	job := res["jobReference"].(map[string]any)["jobId"].(string)
	require.Equal(t, "RUNNING", res["status"].(map[string]any)["state"])
	_, res = call(t, s, "GET", "/projects/p/queries/"+job, nil)
	require.Equal(t, false, res["jobComplete"], "the first poll finds it running")
	require.Nil(t, res["rows"])
	_, res = call(t, s, "GET", "/projects/p/jobs/"+job, nil)
	require.Equal(t, "RUNNING", res["status"].(map[string]any)["state"])
	_, res = call(t, s, "GET", "/projects/p/queries/"+job, nil)
	require.Equal(t, true, res["jobComplete"], "the second poll finds it done")
	require.Len(t, res["rows"], 3)
	_, res = call(t, s, "GET", "/projects/p/jobs/"+job, nil)
	require.Equal(t, "DONE", res["status"].(map[string]any)["state"])

	s.SlowQueries(0)
	body := map[string]any{"query": query, "requestId": "r-1"}
	_, first := call(t, s, "POST", "/projects/p/queries", body)
	_, again := call(t, s, "POST", "/projects/p/queries", body)
	require.Equal(t, first["jobReference"], again["jobReference"], "the same requestId, the same job")
	_, other := call(t, s, "POST", "/projects/p/queries", map[string]any{"query": query})
	require.NotEqual(t, first["jobReference"], other["jobReference"])
	require.Equal(t, 3, s.Requests("jobs.query"))
}

// TestErrors: Google's error body, with BigQuery's reasons.
func TestErrors(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	reason := func(res map[string]any) string {
		return res["error"].(map[string]any)["errors"].([]any)[0].(map[string]any)["reason"].(string)
	}
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		reason       string
	}{
		{"GET", "/projects/p/datasets/d/tables/none", nil, http.StatusNotFound, "notFound"},
		{"GET", "/projects/p/queries/nojob", nil, http.StatusNotFound, "notFound"},
		{"POST", "/projects/p/queries", map[string]any{"query": "SELECT 1"}, http.StatusBadRequest, "invalidQuery"},
		{"POST", "/projects/p/queries", map[string]any{"query": query, "useLegacySql": true}, http.StatusBadRequest, "invalidQuery"},
		{"POST", "/projects/p/queries", map[string]any{"query": "SELECT `nope` FROM `p.d.t` WHERE `k` IS NOT NULL ORDER BY `k`"}, http.StatusBadRequest, "invalidQuery"},
		{"GET", "/projects/p/datasets/d/tables/t/data?pageToken=bogus", nil, http.StatusBadRequest, "invalid"},
		{"DELETE", "/projects/p/datasets/d/tables/t", nil, http.StatusNotFound, "notFound"},
	} {
		status, res := call(t, s, tc.method, tc.path, tc.body)
		require.Equal(t, tc.status, status, "%s %s: %v", tc.method, tc.path, res)
		require.Equal(t, float64(tc.status), res["error"].(map[string]any)["code"])
		require.Equal(t, tc.reason, reason(res), "%s %s", tc.method, tc.path)
	}

	// Fail: the next requests of a kind answer the error, then it serves.
	s.Fail("tables.get", 2, http.StatusServiceUnavailable, "backendError")
	for range 2 {
		status, res := call(t, s, "GET", "/projects/p/datasets/d/tables/t", nil)
		require.Equal(t, http.StatusServiceUnavailable, status)
		require.Equal(t, "backendError", reason(res))
	}
	status, res := call(t, s, "GET", "/projects/p/datasets/d/tables/t", nil)
	require.Equal(t, http.StatusOK, status, res)
	require.Equal(t, "bigquery#table", res["kind"])
	require.Equal(t, 4, s.Requests("tables.get"), "the table not found, the two failed, the last")
}
