package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/runners/builtin"
)

// Plain tokens of the fuzzed server.
const (
	fuzzAdminToken  = "fuzz-admin-token-0123456789"
	fuzzWorkerToken = "fuzz-worker-token-0123456789"
)

// bodyRoutes are the operations that read a JSON body, with the token that
// may call them and, for worker reports, a task id of the right shape.
var bodyRoutes = []struct{ path, token string }{
	{"/tasks", fuzzAdminToken},
	{"/events", fuzzAdminToken},
	{"/catalogs", fuzzAdminToken},
	{"/catalogs/cat-a/collections", fuzzAdminToken},
	{"/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/progress", fuzzWorkerToken},
	{"/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/complete", fuzzWorkerToken},
	{"/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/fail", fuzzWorkerToken},
}

// requestSeeds are bodies of the kinds the tests and docs/http-api.md send, good
// and bad.
var requestSeeds = []string{
	`{"task_type": "noop"}`,
	`{"task_type": "sleep", "inputs": {"duration": "10ms"}, "priority": 5, "dedup_key": "k"}`,
	`{"task_type": "ingestion", "schema_name": "s_cat_a", "inputs": {"catalog_id": "cat-a", "collection_id": "regions", "source": "a.geojson", "format": "geojson", "id_attribute": "code"}}`,
	`{"task_type": "export_features", "schema_name": "system", "inputs": {"catalog_id": "c", "collection_id": "r", "destination": "gs://b/k", "bbox": [0, 0, 1, 1]}}`,
	`{"task_type": "catalog_drop", "inputs": {"schema_name": "s_x", "catalog_id": "x"}}`,
	`{"task_type": "shell_echo", "priority": 99999}`,
	`{"task_type": "noop", "inputs": [1]}`,
	`{"event_type": "catalog.updated", "scope": "CATALOG", "schema_name": "system", "payload": {"catalog_id": "cat-a"}, "dedup_key": "asset:A1"}`,
	`{"event_type": "platform.ping"}`,
	`{"event_type": "Catalog Deleted", "payload": "x"}`,
	`{"catalog_id": "cat-a", "title": "A", "description": "d", "metadata": {"owner": "gis"}}`,
	`{"catalog_id": "cat-b", "schema_name": "tenant_b"}`,
	`{"catalog_id": "X", "schema_name": "pg_x", "metadata": "no"}`,
	`{"collection_id": "regions", "title": "Regions", "layer_config": {"style": "x"}}`,
	`{"owner_id": "wf-host-1", "attempt": 1, "progress": {"done": 3}}`,
	`{"owner_id": "wf-host-1", "outputs": [1, 2]}`,
	`{"owner_id": "wf-host-1", "attempt": 2, "error": "boom", "permanent": true}`,
	`{"source": "admin_regions.geojson", "format": "geojson", "id_attribute": "code", "asset_id": "ADMIN_2024", "validity_start": "2024-01-01T00:00:00Z"}`,
	`{"source": "a.csv", "format": "csv", "id_attribute": "id", "csv": {"wkt_column": "wkt", "delimiter": ";"}}`,
	`{"catalog_id": "other", "source": "x", "format": "ndjson", "id_attribute": "id"}`,
	`{"catalog_id": `, `["x"]`, `{"a": 1} {}`, ``, `{"priority": 1e400}`, `{"task_type": 5}`,
	`{"inputs": {"a": 1, "a": 2}}`, `{"task_type": "noop", "inputs": {"n": 12345678901234567890123}}`,
}

// fuzzServer is a server whose database cannot be reached: every request
// that passes the checks of its body fails with 503, and nothing is written.
func fuzzServer(f *testing.F) *Server {
	pool, err := pgxpool.New(context.Background(), "postgres://wf@/wf?host="+filepath.Join(f.TempDir(), "no-server")+"&sslmode=disable&connect_timeout=1")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(pool.Close)
	names := slices.Concat(builtin.NewRegistry().Names(), webhooks.Names(), builtins.Names(), gcp.Names())
	specs, err := spec.Load(spec.Options{Builtins: names}, "../specs")
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Config{
		Pool: pool, Specs: specs, Logger: slog.New(slog.DiscardHandler),
		Tokens: []config.Token{
			{Name: "admin", Role: config.RoleAdmin, TokenSHA256: config.HashToken(fuzzAdminToken)},
			{Name: "worker", Role: config.RoleWorker, TokenSHA256: config.HashToken(fuzzWorkerToken)},
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// checkProblem fails unless res is a problem document the client is to
// blame for (4xx), or the 503 of the missing database: never a 500, which
// is what a panic or an unexpected error turns into.
func checkProblem(t *testing.T, path string, body []byte, res *httptest.ResponseRecorder) {
	t.Helper()
	var p problem
	if err := json.Unmarshal(res.Body.Bytes(), &p); err != nil {
		t.Fatalf("%s %q: %d answer is not JSON: %v", path, body, res.Code, err)
	}
	if res.Code < 400 || res.Code == http.StatusInternalServerError || res.Code > http.StatusServiceUnavailable ||
		p.Status != res.Code || p.Detail == "" {
		t.Fatalf("%s %q: %d %s", path, body, res.Code, res.Body.Bytes())
	}
	// A request the client got wrong names the field at fault.
	if res.Code == http.StatusBadRequest && len(p.Errors) == 0 {
		t.Fatalf("%s %q: a 400 names no field: %s", path, body, res.Body.Bytes())
	}
}

// FuzzJSONText checks the body walker against encoding/json: a body it
// accepts is valid JSON that decodes to the same value, and any string Go
// can encode (valid UTF-8, no NUL) inside an object is accepted.
func FuzzJSONText(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s), "text")
	}
	f.Add([]byte(`{"a": "\ud83d\ude00", "b": [1, -0.5e3, true, null, {}]}`), "é\u00e9")
	f.Add([]byte(`{"a": "\ud800"}`), "\x00")
	f.Fuzz(func(t *testing.T, body []byte, text string) {
		if checkJSONText(body, 64) == nil && !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
			return
		}
		doc, err := json.Marshal(map[string]any{"k": text, text: []any{text}})
		if err != nil {
			t.Fatal(err)
		}
		if e := checkJSONText(doc, 64); e != nil {
			t.Fatalf("refused %q: %s %s", doc, e.pointer, e.message)
		}
	})
}

// FuzzRequestBody sends one body to every operation that reads one: each
// must answer a problem, never panic nor fail with a 500.
func FuzzRequestBody(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	s := fuzzServer(f)
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, rt := range bodyRoutes {
			req := httptest.NewRequest(http.MethodPost, rt.path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+rt.token)
			res := httptest.NewRecorder()
			h.ServeHTTP(res, req)
			checkProblem(t, "POST "+rt.path, body, res)
		}
		// A SYNCHRONOUS task is checked inside its transaction, which the
		// missing database prevents: check the request as Enqueue would.
		var req createTaskRequest
		if decodeStrict(body, &req) == nil {
			checkClientError(t, s.client.Check(client.Request{TaskType: req.TaskType, SchemaName: req.SchemaName,
				Inputs: req.Inputs, DedupKey: req.DedupKey, Priority: req.Priority}))
		}
	})
}

// FuzzRequestTarget sends requests with any path and query string, as the
// HTTP server reads them, to the whole API: routing, path parameters and
// query parameters must answer a problem (or the operation's answer), never
// panic nor fail with a 500.
func FuzzRequestTarget(f *testing.F) {
	for _, s := range []string{
		"/tasks?limit=10&status=PENDING,ACTIVE&task_type=noop&schema_name=s_cat_a",
		"/tasks?cursor=eyJrIjoidGFza3MiLCJpIjoiMDE5MGI1YjQtN2Q3ZS03YzFhLTlmNmUtM2MyZjFhMmI0YzVkIn0&created_after=2026-01-02T15:04:05Z",
		"/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d", "/tasks/not-a-uuid", "/tasks?limit=0&limit=1", "/tasks?bogus=1",
		"/catalogs?limit=5", "/catalogs/cat-a", "/catalogs/cat-a/collections/regions", "/catalogs/CAT%2Fa", "/catalogs/../etc",
		"/admin/dead-letters?cursor=%ZZ", "/healthz", "/openapi.json", "/tasks/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/cancel",
		"/admin/events/0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d/requeue", "//tasks", "/tasks/", "/nowhere",
	} {
		for _, m := range []uint8{0, 2} {
			f.Add(m, s)
		}
	}
	s := fuzzServer(f)
	h := s.Handler()
	methods := []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut}
	f.Fuzz(func(t *testing.T, method uint8, target string) {
		m := methods[int(method)%len(methods)]
		raw := m + " " + target + " HTTP/1.1\r\nHost: wf\r\nAuthorization: Bearer " + fuzzAdminToken + "\r\nContent-Length: 0\r\n\r\n"
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return // the server answers 400 itself
		}
		res := httptest.NewRecorder()
		h.ServeHTTP(res, req)
		if res.Code < 400 && res.Code != http.StatusNotModified {
			return
		}
		checkProblem(t, m+" "+target, nil, res)
	})
}

// checkClientError fails unless err is nil or one of the errors the API
// words as a 400.
func checkClientError(t *testing.T, err error) {
	t.Helper()
	var verr *client.ValidationError
	if err != nil && !errors.As(err, &verr) && !errors.Is(err, client.ErrUnknownTaskType) {
		t.Fatalf("unexpected error %T: %v", err, err)
	}
}

// FuzzIngestionBody checks the body of POST /ingestion/{catalog}/{collection}
// as the gateway does once the collection is found (which needs the
// database): it is refused with a problem, or becomes inputs that the
// ingestion task type accepts or refuses, never a panic.
func FuzzIngestionBody(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/ingestion/cat-a/regions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res := httptest.NewRecorder()
		checked, prob := s.readBody(res, req)
		if prob != nil {
			if prob.Status != http.StatusBadRequest {
				t.Fatalf("%q: %d %s", body, prob.Status, prob.Detail)
			}
			return
		}
		raw, err := ingestionInputs(checked, "cat-a", "regions")
		var p *problem
		switch {
		case errors.As(err, &p):
			if p.Status != http.StatusBadRequest || p.Detail == "" {
				t.Fatalf("%q: %d %s", body, p.Status, p.Detail)
			}
			return
		case err != nil:
			t.Fatalf("%q: unexpected error %v", body, err)
		}
		if !json.Valid(raw) {
			t.Fatalf("%q: inputs %q are not JSON", body, raw)
		}
		checkClientError(t, s.client.Check(client.Request{TaskType: IngestionTaskType, SchemaName: "s_cat_a", Inputs: raw}))
	})
}
