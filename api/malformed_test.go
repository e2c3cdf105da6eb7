package api_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
)

// The malformed-request corpus (issue 13 item 8). Every request here is the
// client's mistake: each must answer its 4xx as application/problem+json,
// name the field at fault (a JSON pointer into the body, or the parameter),
// and change nothing: not the database's tasks, events, catalogs, schemas or
// tables, nor any file, even after the engine has run.

// malformed is one request of the corpus and what it must answer.
type malformed struct {
	name        string
	method      string
	path        string
	token       string
	contentType string // "" means application/json when there is a body
	body        []byte
	status      int
	// Exactly one of pointer (exact), pointerPrefix or parameter names the
	// field the answer must name.
	pointer       *string
	pointerPrefix string
	parameter     string
}

func ptr(s string) *string { return &s }

// badTexts are text that wf refuses anywhere in a request: as they appear
// inside a JSON string (raw bytes or escapes).
var badTexts = []struct{ name, inJSON string }{
	{"NUL escape", `a\u0000b`},
	{"lone high surrogate", `a\ud800b`},
	{"lone low surrogate", `\udc00`},
	{"high surrogate then letter", `\ud800\u0041`},
	{"invalid UTF-8 byte", "a\xffb"},
	{"overlong UTF-8", "\xc0\xaf"},
	{"truncated UTF-8", "x\xe2\x82"},
	{"UTF-8 encoded surrogate", "\xed\xa0\x80"},
}

// malformedCorpus builds the corpus for a server whose catalog cat-a has
// the collection regions; taskID is any UUIDv7.
func malformedCorpus(taskID string) []malformed {
	var out []malformed
	// A bad text in each of these fields; %s is the JSON string.
	fields := []struct {
		method, path, token, body, pointer string
	}{
		{"POST", "/tasks", tokAdmin, `{"task_type": "%s"}`, "/task_type"},
		{"POST", "/tasks", tokAdmin, `{"task_type": "tenant_job", "schema_name": "s_cat_a", "inputs": {"name": "%s"}}`, "/inputs/name"},
		{"POST", "/tasks", tokAdmin, `{"task_type": "noop", "dedup_key": "%s"}`, "/dedup_key"},
		{"POST", "/events", tokAdmin, `{"event_type": "%s"}`, "/event_type"},
		{"POST", "/events", tokAdmin, `{"event_type": "survey.updated", "payload": {"notes": ["ok", "%s"]}}`, "/payload/notes/1"},
		{"POST", "/catalogs", tokAdmin, `{"catalog_id": "cat-z", "title": "%s"}`, "/title"},
		{"POST", "/catalogs/cat-a/collections", tokAdmin, `{"collection_id": "c", "layer_config": {"style": "%s"}}`, "/layer_config/style"},
		{"POST", "/ingestion/cat-a/regions", tokAdmin, `{"source": "%s", "format": "geojson", "id_attribute": "code", "asset_id": "A"}`, "/source"},
		{"POST", "/tasks/" + taskID + "/progress", tokWorker, `{"owner_id": "%s", "progress": {}}`, "/owner_id"},
		{"POST", "/tasks/" + taskID + "/fail", tokWorker, `{"owner_id": "w", "error": "%s"}`, "/error"},
	}
	for _, f := range fields {
		for _, bt := range badTexts {
			out = append(out, malformed{
				name: fmt.Sprintf("%s %s %s %s", f.method, f.path, f.pointer, bt.name), method: f.method, path: f.path, token: f.token,
				body: []byte(fmt.Sprintf(f.body, bt.inJSON)), status: http.StatusBadRequest, pointer: ptr(f.pointer),
			})
		}
	}
	// A bad text in a member name names the object that holds it.
	for _, bt := range badTexts[:4] {
		out = append(out, malformed{name: "member name " + bt.name, method: "POST", path: "/tasks", token: tokAdmin,
			body: []byte(`{"task_type": "noop", "inputs": {"` + bt.inJSON + `": 1}}`), status: http.StatusBadRequest, pointer: ptr("/inputs")})
	}

	// Nesting deeper than http.max_json_depth (64).
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, d := range []struct {
		path, body, prefix string
	}{
		{"/tasks", `{"task_type": "noop", "inputs": {"x": ` + deep(64) + `}}`, "/inputs/x/0/0"},
		{"/tasks", `{"task_type": "noop", "inputs": {"x": ` + deep(5000) + `}}`, "/inputs/x/0/0"},
		{"/events", `{"event_type": "survey.updated", "payload": {"p": ` + deep(100) + `}}`, "/payload/p/0"},
		{"/catalogs", `{"catalog_id": "cat-z", "metadata": {"m": ` + deep(70) + `}}`, "/metadata/m/0"},
		{"/ingestion/cat-a/regions", `{"source": "a", "format": "geojson", "id_attribute": "code", "asset_id": "A", "csv": ` +
			strings.Repeat(`{"a":`, 80) + `1` + strings.Repeat(`}`, 80) + `}`, "/csv/a/a"},
	} {
		out = append(out, malformed{name: "deep " + d.path + " " + d.prefix, method: "POST", path: d.path, token: tokAdmin,
			body: []byte(d.body), status: http.StatusBadRequest, pointerPrefix: d.prefix})
	}

	// Member names given twice.
	for _, d := range []struct{ path, token, body, pointer string }{
		{"/tasks", tokAdmin, `{"task_type": "noop", "task_type": "catalog_drop"}`, "/task_type"},
		{"/tasks", tokAdmin, `{"task_type": "noop", "inputs": {"n": 1, "n": 2}}`, "/inputs/n"},
		{"/events", tokAdmin, `{"event_type": "survey.updated", "payload": {"a/b": 1, "a/b": 2}}`, "/payload/a~1b"},
		{"/catalogs", tokAdmin, `{"catalog_id": "cat-z", "catalog_id": "cat-y"}`, "/catalog_id"},
		{"/ingestion/cat-a/regions", tokAdmin, `{"source": "a", "source": "b", "format": "geojson", "id_attribute": "code", "asset_id": "A"}`, "/source"},
		{"/tasks/" + taskID + "/progress", tokWorker, `{"owner_id": "w", "owner_id": "x", "progress": {}}`, "/owner_id"},
		{"/tasks/" + taskID + "/complete", tokWorker, `{"owner_id": "w", "outputs": {"a~b": 1, "a~b": 1}}`, "/outputs/a~0b"},
	} {
		out = append(out, malformed{name: "duplicate " + d.path + " " + d.pointer, method: "POST", path: d.path, token: d.token,
			body: []byte(d.body), status: http.StatusBadRequest, pointer: ptr(d.pointer)})
	}

	// Bodies that are not one JSON object, or not JSON at all.
	for _, d := range []struct{ name, body, pointer string }{
		{"empty", ``, ""},
		{"blank", " \n\t ", ""},
		{"array", `[1]`, ""},
		{"string", `"task"`, ""},
		{"trailing data", `{"task_type": "noop"} {}`, ""},
		{"truncated", `{"task_type": `, "/task_type"},
		{"unterminated string", `{"task_type": "noop`, "/task_type"},
		{"leading zero", `{"task_type": "noop", "priority": 01}`, "/priority"},
		{"plus sign", `{"task_type": "noop", "priority": +1}`, "/priority"},
		{"bare word", `{"task_type": noop}`, "/task_type"},
		{"single quotes", `{'task_type': 'noop'}`, ""},
		{"trailing comma", `{"task_type": "noop",}`, ""},
		{"raw control character", "{\"task_type\": \"no\x01op\"}", "/task_type"},
		{"raw NUL", "{\"task_type\": \"no\x00op\"}", "/task_type"},
		{"bad escape", `{"task_type": "no\qop"}`, "/task_type"},
		{"short unicode escape", `{"task_type": "\u12"}`, "/task_type"},
		{"wrong type", `{"task_type": "noop", "priority": "high"}`, "/priority"},
		{"unknown member", `{"task_type": "noop", "owner": "x"}`, "/owner"},
		{"inputs not an object", `{"task_type": "noop", "inputs": [1]}`, "/inputs"},
		{"priority out of range", `{"task_type": "noop", "priority": 40000}`, "/priority"},
		{"BOM", "\xef\xbb\xbf{\"task_type\": \"noop\"}", ""},
	} {
		out = append(out, malformed{name: "body " + d.name, method: "POST", path: "/tasks", token: tokAdmin,
			body: []byte(d.body), status: http.StatusBadRequest, pointer: ptr(d.pointer)})
	}
	// Member names only case-insensitively equal to a field, and fields the
	// engine refuses.
	for _, d := range []struct{ path, body, pointer string }{
		{"/tasks", `{"Task_Type": "noop"}`, "/Task_Type"},
		{"/tasks", `{"task_type": "noop", "TASK_TYPE": "catalog_drop"}`, "/TASK_TYPE"},
		{"/events", `{"Event_Type": "survey.updated"}`, "/Event_Type"},
		{"/catalogs", `{"Catalog_ID": "cat-z"}`, "/Catalog_ID"},
		{"/tasks", `{"task_type": "export_features", "inputs": {}}`, "/schema_name"},
		{"/tasks", `{"task_type": "noop", "dedup_key": "` + strings.Repeat("k", 513) + `"}`, "/dedup_key"},
		{"/tasks", `{"task_type": "sleep", "inputs": {"duration": 5}}`, "/inputs/duration"},
		{"/events", `{"event_type": "survey.updated", "scope": "GALAXY"}`, "/scope"},
		{"/events", `{"event_type": "survey.updated", "dedup_key": "` + strings.Repeat("k", 513) + `"}`, "/dedup_key"},
		{"/events", `{"event_type": "Survey Updated"}`, "/event_type"},
		{"/catalogs", `{"catalog_id": "Cat Z"}`, "/catalog_id"},
	} {
		out = append(out, malformed{name: "fields " + d.path + " " + d.body[:min(40, len(d.body))], method: "POST", path: d.path,
			token: tokAdmin, body: []byte(d.body), status: http.StatusBadRequest, pointer: ptr(d.pointer)})
	}
	out = append(out,
		malformed{name: "text/plain body", method: "POST", path: "/tasks", token: tokAdmin, contentType: "text/plain",
			body: []byte(`{"task_type": "noop"}`), status: http.StatusUnsupportedMediaType, parameter: "Content-Type"},
		malformed{name: "body over the limit", method: "POST", path: "/events", token: tokAdmin,
			body:   []byte(`{"event_type": "survey.updated", "payload": {"x": "` + strings.Repeat("x", 1<<20) + `"}}`),
			status: http.StatusRequestEntityTooLarge, pointer: ptr("")},
	)

	// Query strings and cursors.
	cursor := func(kind, id string) string {
		b, _ := json.Marshal(map[string]string{"k": kind, "i": id})
		return base64.RawURLEncoding.EncodeToString(b)
	}
	for _, d := range []struct{ path, parameter string }{
		{"/tasks?schema_name=%00", "schema_name"},
		{"/tasks?schema_name=s_cat_a%ff", "schema_name"},
		{"/tasks?task_type=%ed%a0%80", "task_type"},
		{"/tasks?task_type=noop%0a", "task_type"},
		{"/tasks?status=%c0%af", "status"},
		{"/tasks?created_from=%00", "created_from"},
		{"/tasks?limit=%zz", "limit"},
		{"/tasks?%00=1", "\x00"},
		{"/tasks?cursor=" + cursor("tasks", "\x00"), "cursor"},
		{"/tasks?cursor=%ff%fe", "cursor"},
		{"/catalogs?cursor=" + cursor("catalogs", "cat\x00"), "cursor"},
		{"/catalogs?cursor=" + cursor("catalogs", "\x01"), "cursor"},
		{"/catalogs?limit=%80", "limit"},
		{"/catalogs/cat-a/collections?cursor=" + cursor("collections", "r\x00"), "cursor"},
		{"/admin/dead-letters?kind=tasks%00", "kind"},
		{"/admin/dead-letters?kind=events&cursor=" + cursor("events", "\x00"), "cursor"},
	} {
		out = append(out, malformed{name: "query " + d.path, method: "GET", path: d.path, token: tokAdmin,
			status: http.StatusBadRequest, parameter: d.parameter})
	}

	// Path parameters.
	for _, d := range []struct{ method, path, parameter string }{
		{"GET", "/catalogs/%00", "path"},
		{"GET", "/catalogs/cat%ff", "catalog_id"},
		{"DELETE", "/catalogs/%ed%a0%80", "catalog_id"},
		{"GET", "/catalogs/cat-a/collections/r%c0%af", "collection_id"},
		{"GET", "/tasks/%ff", "task_id"},
		{"POST", "/tasks/" + taskID[:35] + "%00/cancel", "path"},
		{"POST", "/tasks/" + taskID[:35] + "%01/cancel", "task_id"},
		{"POST", "/admin/events/%fe/requeue", "event_id"},
	} {
		out = append(out, malformed{name: "path " + d.method + " " + d.path, method: d.method, path: d.path, token: tokAdmin,
			status: http.StatusBadRequest, parameter: d.parameter})
	}
	return out
}

// fingerprint is snapshot plus the schemas, tables and files that exist.
func (b *bundle) fingerprint(root string) string {
	b.t.Helper()
	var sb strings.Builder
	sb.WriteString(b.snapshot())
	var schemas, tables string
	require.NoError(b.t, b.pool.QueryRow(b.ctx, `
SELECT (SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace),
       (SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY 1) FROM pg_tables)`).Scan(&schemas, &tables))
	fmt.Fprintf(&sb, "schemas %s\ntables %s\n", schemas, tables)
	require.NoError(b.t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&sb, "file %s %d %s\n", p, info.Size(), info.ModTime())
		return nil
	}))
	return sb.String()
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	root := b.root
	startFeatureEngine(t, b, t.TempDir())
	b.createCatalog("cat-a", "regions")
	copyFixture(t, b.tenantDir("s_cat_a"))
	id, _, err := store.NewID()
	require.NoError(t, err)
	taskID := id.String()
	corpus := malformedCorpus(taskID)
	require.GreaterOrEqual(t, len(corpus), 100)

	b.idle()
	before := b.fingerprint(root)
	for _, m := range corpus {
		t.Run(m.name, func(t *testing.T) {
			bt := b.in(t)
			header := http.Header{}
			var body any
			if m.body != nil {
				body = m.body
			}
			if m.contentType != "" {
				header.Set("Content-Type", m.contentType)
			}
			res := bt.doHeaders(m.method, m.path, m.token, body, header)
			require.Equal(t, m.status, res.status, "%s", res.body)
			require.Equal(t, "application/problem+json", res.header.Get("Content-Type"))
			var p struct {
				Errors []struct {
					Pointer   *string `json:"pointer"`
					Parameter string  `json:"parameter"`
				} `json:"errors"`
			}
			require.NoError(t, json.Unmarshal(res.body, &p))
			require.NotEmpty(t, p.Errors, "the answer names the field: %s", res.body)
			e := p.Errors[0]
			switch {
			case m.pointer != nil:
				require.NotNil(t, e.Pointer, "%s", res.body)
				require.Equal(t, *m.pointer, *e.Pointer, "%s", res.body)
			case m.pointerPrefix != "":
				require.NotNil(t, e.Pointer, "%s", res.body)
				require.True(t, strings.HasPrefix(*e.Pointer, m.pointerPrefix), "%s", res.body)
			default:
				require.Equal(t, m.parameter, e.Parameter, "%s", res.body)
			}
		})
	}
	b.idle()
	require.Equal(t, before, b.fingerprint(root), "a malformed request changed the database or the files")
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the tenant's folder (with the fixture) is in the files root")
}
