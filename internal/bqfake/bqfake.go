// Package bqfake is an in-process BigQuery for tests: an HTTP server that
// speaks the documented REST endpoints (bigquery/v2) that read a table and
// run a query, with BigQuery's JSON shapes and error bodies, whichever
// client calls them:
//
//   - tables.get: GET projects/{p}/datasets/{d}/tables/{t} (the schema);
//   - jobs.query: POST projects/{p}/queries, the first page of rows
//     (maxResults of the request body) with a pageToken, or jobComplete
//     false when the fake is told to make the client wait; a requestId
//     seen before answers the same job, as BigQuery's idempotent retries
//     do;
//   - jobs.insert: POST projects/{p}/jobs, and jobs.get: GET
//     projects/{p}/jobs/{id};
//   - jobs.getQueryResults: GET projects/{p}/queries/{id}, page by page
//     (pageToken, startIndex, maxResults), polled until the job is
//     complete;
//   - tabledata.list: GET projects/{p}/datasets/{d}/tables/{t}/data.
//
// Rows are written as the REST API writes them: {"f": [{"v": …}]}, every
// scalar a string, NULL null, a REPEATED value a list of {"v": …}, a
// RECORD {"f": […]}, and a TIMESTAMP as float seconds or, when the request
// sets formatOptions.useInt64Timestamp, integer microseconds.
//
// The only SQL it evaluates is what the dwh_join task sends:
// SELECT `c1`, `c2`, … FROM `project.dataset.table` WHERE `k` IS NOT NULL
// ORDER BY `k`, INTEGER keys ordered numerically and STRING keys byte by
// byte, as BigQuery orders them. Any other query answers 400 invalidQuery.
// Fail makes requests of a kind answer an error, as an unavailable or
// overloaded BigQuery does.
package bqfake

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Field is one column of a table's schema.
type Field struct {
	Name string `json:"name"`
	// Type is a BigQuery type: INTEGER, STRING, FLOAT, BOOLEAN, NUMERIC, DATE, TIMESTAMP, RECORD, ….
	Type string `json:"type"`
	// Mode is NULLABLE (the default), REQUIRED or REPEATED.
	Mode string `json:"mode,omitempty"`
	// Fields are a RECORD's fields.
	Fields []Field `json:"fields,omitempty"`
}

// Server is a running fake.
type Server struct {
	*httptest.Server

	mu     sync.Mutex
	tables map[string]*table // "project.dataset.table"
	jobs   map[string]*job
	nextID int
	// pageSize is the most rows a page holds when the request sets none.
	pageSize int
	// polls makes new queries incomplete for this many getQueryResults calls.
	polls int
	// requests counts requests by kind ("jobs.query", …).
	requests map[string]int
	// failures are the errors the next requests of a kind answer.
	failures map[string][]failure
	// byRequestID are the jobs of the jobs.query requests with a requestId.
	byRequestID map[string]*job
}

// failure is an error a request answers instead of its result.
type failure struct {
	status int
	reason string
}

type table struct {
	fields []Field
	rows   [][]any // values as JSON-able Go values; nil is NULL
}

type job struct {
	project, id string
	fields      []Field
	rows        [][]any
	pendingPoll int
}

// New starts a fake BigQuery on loopback; its URL is the client's endpoint.
func New() *Server {
	s := &Server{tables: map[string]*table{}, jobs: map[string]*job{}, pageSize: 1000, requests: map[string]int{},
		failures: map[string][]failure{}, byRequestID: map[string]*job{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// AddTable creates project.dataset.table with a schema and rows (one value
// per field: int64 for INTEGER, string for STRING and for the types
// BigQuery writes as text (NUMERIC, DATE, …), float64, bool, time.Time for
// TIMESTAMP, []any for a REPEATED field and for a RECORD (its fields'
// values in order), nil for NULL).
func (s *Server) AddTable(project, dataset, name string, fields []Field, rows [][]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables[project+"."+dataset+"."+name] = &table{fields: fields, rows: rows}
}

// SetPageSize sets the most rows a page holds when the client asks no size.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// SlowQueries makes every new query incomplete for n polls, as a long
// query would be: the client must wait through jobs.getQueryResults.
func (s *Server) SlowQueries(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.polls = n
}

// Fail makes the next n requests of a kind (as Requests names them) answer
// an error of the given HTTP status and reason, in Google's error body:
// 503 "backendError" or 429 "rateLimitExceeded" as BigQuery answers when
// it is unavailable or overloaded, 403 "accessDenied", ….
func (s *Server) Fail(kind string, n, status int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures[kind] = append(s.failures[kind], failure{status: status, reason: reason})
	}
}

// Requests returns how many requests of a kind arrived: "tables.get",
// "jobs.query", "jobs.insert", "jobs.get", "jobs.getQueryResults",
// "tabledata.list".
func (s *Server) Requests(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[kind]
}

var (
	tablePath   = regexp.MustCompile(`^projects/([^/]+)/datasets/([^/]+)/tables/([^/]+)$`)
	dataPath    = regexp.MustCompile(`^projects/([^/]+)/datasets/([^/]+)/tables/([^/]+)/data$`)
	queriesPath = regexp.MustCompile(`^projects/([^/]+)/queries$`)
	resultsPath = regexp.MustCompile(`^projects/([^/]+)/queries/([^/]+)$`)
	jobsPath    = regexp.MustCompile(`^projects/([^/]+)/jobs$`)
	jobPath     = regexp.MustCompile(`^projects/([^/]+)/jobs/([^/]+)$`)
	// selectSQL is the one query shape the fake evaluates.
	selectSQL = regexp.MustCompile("^SELECT ((?:`[^`]+`(?:, )?)+) FROM `([^`]+)` WHERE `([^`]+)` IS NOT NULL ORDER BY `([^`]+)`$")
)

// kinds name the requests the fake serves, by method and path.
var kinds = []struct {
	method, kind string
	path         *regexp.Regexp
}{
	{http.MethodGet, "tables.get", tablePath},
	{http.MethodGet, "tabledata.list", dataPath},
	{http.MethodPost, "jobs.query", queriesPath},
	{http.MethodPost, "jobs.insert", jobsPath},
	{http.MethodGet, "jobs.get", jobPath},
	{http.MethodGet, "jobs.getQueryResults", resultsPath},
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	p := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"), "bigquery/v2/")
	kind := ""
	for _, k := range kinds {
		if r.Method == k.method && k.path.MatchString(p) {
			kind = k.kind
			break
		}
	}
	if kind == "" {
		apiError(w, http.StatusNotFound, "notFound", fmt.Sprintf("bqfake does not serve %s %s", r.Method, r.URL.Path))
		return
	}
	s.requests[kind]++
	if f := s.failures[kind]; len(f) > 0 {
		s.failures[kind] = f[1:]
		apiError(w, f[0].status, f[0].reason, fmt.Sprintf("bqfake: %s failed as told (%s)", kind, f[0].reason))
		return
	}
	q := r.URL.Query()
	switch kind {
	case "tables.get":
		m, t := s.pathTable(w, tablePath, p)
		if t == nil {
			return
		}
		write(w, map[string]any{"kind": "bigquery#table", "id": m[1] + ":" + m[2] + "." + m[3], "type": "TABLE",
			"tableReference": map[string]any{"projectId": m[1], "datasetId": m[2], "tableId": m[3]},
			"schema":         map[string]any{"fields": t.fields}, "numRows": strconv.Itoa(len(t.rows))})
	case "tabledata.list":
		_, t := s.pathTable(w, dataPath, p)
		if t == nil {
			return
		}
		page, token, err := s.page(t.rows, pagingOf(q))
		if err != nil {
			apiError(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		write(w, map[string]any{"kind": "bigquery#tableDataList", "totalRows": strconv.Itoa(len(t.rows)),
			"rows": encodeRows(t.fields, page, q.Get("formatOptions.useInt64Timestamp") == "true"), "pageToken": token})
	case "jobs.query":
		var req struct {
			Query         string `json:"query"`
			UseLegacySQL  *bool  `json:"useLegacySql"`
			MaxResults    *int   `json:"maxResults"`
			RequestID     string `json:"requestId"`
			FormatOptions struct {
				UseInt64Timestamp bool `json:"useInt64Timestamp"`
			} `json:"formatOptions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			apiError(w, http.StatusBadRequest, "invalid", "Invalid JSON payload received. "+err.Error())
			return
		}
		j := s.byRequestID[req.RequestID]
		if j == nil {
			var status int
			var reason, msg string
			j, status, reason, msg = s.startQuery(queriesPath.FindStringSubmatch(p)[1], req.Query, req.UseLegacySQL)
			if j == nil {
				apiError(w, status, reason, msg)
				return
			}
			if req.RequestID != "" {
				s.byRequestID[req.RequestID] = j
			}
		}
		pg := paging{}
		if req.MaxResults != nil {
			pg.maxResults = strconv.Itoa(*req.MaxResults)
		}
		s.results(w, j, pg, req.FormatOptions.UseInt64Timestamp)
	case "jobs.insert":
		var req struct {
			JobReference  struct{ JobID string } `json:"jobReference"`
			Configuration struct {
				Query struct {
					Query        string `json:"query"`
					UseLegacySQL *bool  `json:"useLegacySql"`
				} `json:"query"`
			} `json:"configuration"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			apiError(w, http.StatusBadRequest, "invalid", "Invalid JSON payload received. "+err.Error())
			return
		}
		j, status, reason, msg := s.startQuery(jobsPath.FindStringSubmatch(p)[1], req.Configuration.Query.Query, req.Configuration.Query.UseLegacySQL)
		if j == nil {
			apiError(w, status, reason, msg)
			return
		}
		write(w, s.jobResource(j))
	case "jobs.get":
		if j := s.pathJob(w, jobPath, p); j != nil {
			write(w, s.jobResource(j))
		}
	case "jobs.getQueryResults":
		if j := s.pathJob(w, resultsPath, p); j != nil {
			if j.pendingPoll > 0 {
				j.pendingPoll--
			}
			s.results(w, j, pagingOf(q), q.Get("formatOptions.useInt64Timestamp") == "true")
		}
	}
}

// pathTable returns the groups of re in path (project, dataset, table)
// and the table they name, or answers 404 and returns a nil table.
func (s *Server) pathTable(w http.ResponseWriter, re *regexp.Regexp, path string) ([]string, *table) {
	m := re.FindStringSubmatch(path)
	t := s.tables[m[1]+"."+m[2]+"."+m[3]]
	if t == nil {
		apiError(w, http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Table %s:%s.%s", m[1], m[2], m[3]))
	}
	return m, t
}

// pathJob returns the job whose id is the second group of re in path, or
// answers 404 and returns nil.
func (s *Server) pathJob(w http.ResponseWriter, re *regexp.Regexp, path string) *job {
	j := s.jobs[re.FindStringSubmatch(path)[2]]
	if j == nil {
		apiError(w, http.StatusNotFound, "notFound", "Not found: Job "+path)
	}
	return j
}

// startQuery evaluates a query into a job, or says why it cannot.
func (s *Server) startQuery(project, sql string, legacy *bool) (*job, int, string, string) {
	if legacy != nil && *legacy {
		return nil, http.StatusBadRequest, "invalidQuery", "bqfake runs GoogleSQL only (useLegacySql: false)"
	}
	m := selectSQL.FindStringSubmatch(strings.TrimSpace(sql))
	if m == nil || m[3] != m[4] {
		return nil, http.StatusBadRequest, "invalidQuery", "bqfake evaluates only SELECT `c`, … FROM `p.d.t` WHERE `k` IS NOT NULL ORDER BY `k`; got: " + sql
	}
	t := s.tables[m[2]]
	if t == nil {
		return nil, http.StatusNotFound, "notFound", "Not found: Table " + m[2] + " was not found"
	}
	var cols []int
	var fields []Field
	for _, name := range strings.Split(m[1], ", ") {
		name = strings.Trim(name, "`")
		i := slices.IndexFunc(t.fields, func(f Field) bool { return f.Name == name })
		if i < 0 {
			return nil, http.StatusBadRequest, "invalidQuery", "Unrecognized name: " + name
		}
		cols, fields = append(cols, i), append(fields, t.fields[i])
	}
	key := slices.IndexFunc(t.fields, func(f Field) bool { return f.Name == m[3] })
	if key < 0 {
		return nil, http.StatusBadRequest, "invalidQuery", "Unrecognized name: " + m[3]
	}
	var rows [][]any
	for _, r := range t.rows {
		if r[key] == nil {
			continue
		}
		out := make([]any, len(cols))
		for i, c := range cols {
			out[i] = r[c]
		}
		rows = append(rows, append(out, r[key]))
	}
	slices.SortStableFunc(rows, func(a, b []any) int {
		x, y := a[len(a)-1], b[len(b)-1]
		if xi, ok := x.(int64); ok {
			yi, _ := y.(int64)
			return cmpInt(xi, yi)
		}
		return strings.Compare(fmt.Sprint(x), fmt.Sprint(y))
	})
	for i := range rows {
		rows[i] = rows[i][:len(cols)]
	}
	s.nextID++
	j := &job{project: project, id: fmt.Sprintf("bqfake_job_%d", s.nextID), fields: fields, rows: rows, pendingPoll: s.polls}
	s.jobs[j.id] = j
	return j, 0, "", ""
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// jobResource is a job as jobs.get shows it.
func (s *Server) jobResource(j *job) map[string]any {
	state := "DONE"
	if j.pendingPoll > 0 {
		state = "RUNNING"
	}
	return map[string]any{"kind": "bigquery#job", "id": j.project + ":US." + j.id,
		"jobReference":  map[string]any{"projectId": j.project, "jobId": j.id, "location": "US"},
		"configuration": map[string]any{"jobType": "QUERY", "query": map[string]any{"query": "", "useLegacySql": false}},
		"status":        map[string]any{"state": state},
		"statistics":    map[string]any{"query": map[string]any{"totalBytesProcessed": "0"}}}
}

// results answers jobs.query or jobs.getQueryResults: one page of a
// complete job, or jobComplete false.
func (s *Server) results(w http.ResponseWriter, j *job, pg paging, int64Timestamps bool) {
	ref := map[string]any{"projectId": j.project, "jobId": j.id, "location": "US"}
	if j.pendingPoll > 0 {
		write(w, map[string]any{"kind": "bigquery#queryResponse", "jobReference": ref, "jobComplete": false})
		return
	}
	page, token, err := s.page(j.rows, pg)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	write(w, map[string]any{"kind": "bigquery#queryResponse", "jobReference": ref, "jobComplete": true,
		"schema": map[string]any{"fields": j.fields}, "totalRows": strconv.Itoa(len(j.rows)),
		"rows": encodeRows(j.fields, page, int64Timestamps), "pageToken": token})
}

// paging is a request's pageToken, startIndex and maxResults, as sent.
type paging struct {
	pageToken, startIndex, maxResults string
}

// pagingOf reads the paging parameters of a request's query string.
func pagingOf(q url.Values) paging {
	return paging{pageToken: q.Get("pageToken"), startIndex: q.Get("startIndex"), maxResults: q.Get("maxResults")}
}

// page cuts rows by the request's pageToken (an offset), startIndex and
// maxResults.
func (s *Server) page(rows [][]any, pg paging) ([][]any, string, error) {
	start := 0
	if t := pg.pageToken; t != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "offset-"))
		if err != nil || !strings.HasPrefix(t, "offset-") || n < 0 || n > len(rows) {
			return nil, "", fmt.Errorf("invalid page token %q", t)
		}
		start = n
	} else if si := pg.startIndex; si != "" {
		n, err := strconv.Atoi(si)
		if err != nil || n < 0 {
			return nil, "", fmt.Errorf("invalid startIndex %q", si)
		}
		start = min(n, len(rows))
	}
	size := s.pageSize
	if mr := pg.maxResults; mr != "" {
		if n, err := strconv.Atoi(mr); err == nil && n >= 0 {
			size = min(n, s.pageSize)
		}
	}
	end := min(start+size, len(rows))
	token := ""
	if end < len(rows) {
		token = "offset-" + strconv.Itoa(end)
	}
	return rows[start:end], token, nil
}

// encodeRows writes rows as the REST API does: {"f": [{"v": …}]}.
func encodeRows(fields []Field, rows [][]any, int64Timestamps bool) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = encodeRecord(fields, r, int64Timestamps)
	}
	return out
}

// encodeRecord writes one row or RECORD value: {"f": [{"v": …}, …]}.
func encodeRecord(fields []Field, values []any, int64Timestamps bool) map[string]any {
	cells := make([]any, len(values))
	for k, v := range values {
		cells[k] = map[string]any{"v": encodeValue(fields[k], v, int64Timestamps)}
	}
	return map[string]any{"f": cells}
}

// encodeValue writes one field's value: every scalar as a string, NULL as
// null, a REPEATED value as a list of {"v": …}, a RECORD as {"f": […]}, a
// TIMESTAMP as float seconds since the epoch (BigQuery's default, as
// 1.7092872E9) or integer microseconds (formatOptions.useInt64Timestamp).
func encodeValue(f Field, v any, int64Timestamps bool) any {
	if v == nil {
		return nil
	}
	if f.Mode == "REPEATED" {
		list, _ := v.([]any)
		elem := f
		elem.Mode = ""
		out := make([]any, len(list))
		for i, e := range list {
			out[i] = map[string]any{"v": encodeValue(elem, e, int64Timestamps)}
		}
		return out
	}
	switch x := v.(type) {
	case []any: // a RECORD's fields
		return encodeRecord(f.Fields, x, int64Timestamps)
	case time.Time:
		if int64Timestamps {
			return strconv.FormatInt(x.UnixMicro(), 10)
		}
		// Java's Double.toString, as BigQuery writes it: 1.7092872E9.
		e := strconv.FormatFloat(float64(x.UnixMicro())/1e6, 'E', -1, 64)
		mant, exp, _ := strings.Cut(e, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		n, _ := strconv.Atoi(exp)
		return mant + "E" + strconv.Itoa(n)
	case float64:
		switch {
		case math.IsInf(x, 1):
			return "Infinity"
		case math.IsInf(x, -1):
			return "-Infinity"
		}
		return strconv.FormatFloat(x, 'g', -1, 64) // NaN is "NaN"
	default:
		return fmt.Sprint(x)
	}
}

// apiError writes Google's error body.
func apiError(w http.ResponseWriter, status int, reason, message string) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": message,
		"errors": []any{map[string]any{"reason": reason, "message": message, "domain": "global"}}, "status": http.StatusText(status)}})
}

func write(w http.ResponseWriter, body any) {
	_ = json.NewEncoder(w).Encode(body)
}
