// Package esfake is an in-process Elasticsearch for tests: an HTTP server
// that speaks the documented REST endpoints wf's search indexer uses, as
// go-elasticsearch sends them, with Elasticsearch's status codes and bodies.
//
// It implements the product check (every response carries
// X-Elastic-Product: Elasticsearch), GET / (cluster info), HEAD, PUT (with
// mappings) and DELETE of an index, _bulk (index, create and delete
// actions, NDJSON, per-item results with errors: documents are checked
// against the index's mapping — numbers, booleans, dates and geo_shape
// GeoJSON — so a bad document fails alone with mapper_parsing_exception),
// _refresh (documents become visible to _count and GET _doc only after a
// refresh, as in Elasticsearch), _count and GET _mapping (the mappings the
// index was created with: no dynamic fields are added). Faults can be injected: whole
// _bulk requests answered 429 or 5xx, and items answered 429 or 5xx.
//
// It is not Elasticsearch: no search, no shards, no analysis. What wf was
// and was not tested against is said in docs/geodata.md ("Search
// (Elasticsearch)").
package esfake

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a running fake; its fields are guarded by mu.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	indices map[string]*index
	// rejectBulk answers the next len(rejectBulk) _bulk requests with these statuses.
	rejectBulk []int
	// itemFaults answers the next attempts of a document id with these statuses.
	itemFaults map[string][]int
	// bulkRequests counts _bulk requests, rejected ones included.
	bulkRequests int
}

// index is one index: its mapping and its documents.
type index struct {
	mappings map[string]any
	// fields maps a dotted field path to its mapped type.
	fields  map[string]string
	docs    map[string]json.RawMessage // every written document
	visible map[string]json.RawMessage // as of the last refresh
	version map[string]int64
	seq     int64
}

// New starts a fake Elasticsearch on loopback; it stops with the test's Close.
func New() *Server {
	s := &Server{indices: map[string]*index{}, itemFaults: map[string][]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// RejectBulk makes the next _bulk requests answer the given statuses (429
// or 5xx) whole, one status per request.
func (s *Server) RejectBulk(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectBulk = append(s.rejectBulk, statuses...)
}

// FailItem makes the next attempts of the document id (in any index)
// answer the given statuses (429 or 5xx) in the _bulk response, one per
// attempt, while the rest of the request succeeds.
func (s *Server) FailItem(id string, statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.itemFaults[id] = append(s.itemFaults[id], statuses...)
}

// BulkRequests returns how many _bulk requests arrived.
func (s *Server) BulkRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bulkRequests
}

// Indices returns the names of the existing indices.
func (s *Server) Indices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name := range s.indices {
		out = append(out, name)
	}
	return out
}

// Mapping returns an index's mappings as created, or nil.
func (s *Server) Mapping(name string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.indices[name]; ix != nil {
		return ix.mappings
	}
	return nil
}

// Docs returns an index's written documents (refreshed or not) by id.
func (s *Server) Docs(name string) map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]json.RawMessage{}
	if ix := s.indices[name]; ix != nil {
		for id, d := range ix.docs {
			out[id] = d
		}
	}
	return out
}

// validIndexName follows Elasticsearch's rules: lower case, none of
// \ / * ? " < > | space , # :, not starting with - _ +, not . or ..,
// at most 255 bytes.
var validIndexName = regexp.MustCompile(`^[^-_+A-Z\\/*?"<>| ,#:][^A-Z\\/*?"<>| ,#:]{0,254}$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if parts[0] == "" {
		parts = nil
	}
	switch {
	case len(parts) == 0 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		write(w, http.StatusOK, map[string]any{"name": "esfake", "cluster_name": "esfake", "tagline": "You Know, for Search",
			"version": map[string]any{"number": "8.19.7", "build_flavor": "default"}})
	case len(parts) == 1 && parts[0] == "_bulk", len(parts) == 2 && parts[1] == "_bulk":
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			methodNotAllowed(w, r)
			return
		}
		def := ""
		if len(parts) == 2 {
			def = parts[0]
		}
		s.bulk(w, r, def)
	case len(parts) == 1:
		s.indexOp(w, r, parts[0])
	case len(parts) == 2 && parts[1] == "_refresh":
		s.withIndex(w, parts[0], func(ix *index) (int, any) {
			ix.visible = map[string]json.RawMessage{}
			for id, d := range ix.docs {
				ix.visible[id] = d
			}
			return http.StatusOK, map[string]any{"_shards": map[string]any{"total": 1, "successful": 1, "failed": 0}}
		})
	case len(parts) == 2 && parts[1] == "_count":
		s.withIndex(w, parts[0], func(ix *index) (int, any) {
			return http.StatusOK, map[string]any{"count": len(ix.visible), "_shards": map[string]any{"total": 1, "successful": 1, "skipped": 0, "failed": 0}}
		})
	case len(parts) == 2 && parts[1] == "_mapping" && r.Method == http.MethodGet:
		s.withIndex(w, parts[0], func(ix *index) (int, any) {
			return http.StatusOK, map[string]any{parts[0]: map[string]any{"mappings": ix.mappings}}
		})
	case len(parts) == 3 && parts[1] == "_doc" && r.Method == http.MethodGet:
		s.withIndex(w, parts[0], func(ix *index) (int, any) {
			d, ok := ix.visible[parts[2]]
			if !ok {
				return http.StatusNotFound, map[string]any{"_index": parts[0], "_id": parts[2], "found": false}
			}
			return http.StatusOK, map[string]any{"_index": parts[0], "_id": parts[2], "_version": ix.version[parts[2]], "found": true, "_source": d}
		})
	default:
		write(w, http.StatusBadRequest, errorBody("illegal_argument_exception", fmt.Sprintf("request [%s %s] is not supported by esfake", r.Method, r.URL.Path)))
	}
}

// withIndex runs fn on an existing index, or answers 404 index_not_found_exception.
func (s *Server) withIndex(w http.ResponseWriter, name string, fn func(*index) (int, any)) {
	s.mu.Lock()
	ix := s.indices[name]
	if ix == nil {
		s.mu.Unlock()
		write(w, http.StatusNotFound, indexNotFound(name))
		return
	}
	status, body := fn(ix)
	s.mu.Unlock()
	write(w, status, body)
}

// indexOp serves HEAD, PUT and DELETE /{index}.
func (s *Server) indexOp(w http.ResponseWriter, r *http.Request, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.indices[name]
	switch r.Method {
	case http.MethodHead:
		if ix == nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	case http.MethodPut:
		if !validIndexName.MatchString(name) || name == "." || name == ".." {
			write(w, http.StatusBadRequest, errorBody("invalid_index_name_exception", fmt.Sprintf("Invalid index name [%s]", name)))
			return
		}
		if ix != nil {
			write(w, http.StatusBadRequest, errorBody("resource_already_exists_exception", fmt.Sprintf("index [%s] already exists", name)))
			return
		}
		var body struct {
			Settings map[string]any `json:"settings"`
			Mappings map[string]any `json:"mappings"`
		}
		if raw, _ := io.ReadAll(r.Body); len(bytes.TrimSpace(raw)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				write(w, http.StatusBadRequest, errorBody("x_content_parse_exception", err.Error()))
				return
			}
		}
		fields := map[string]string{}
		if err := collectFields(body.Mappings["properties"], "", fields); err != nil {
			write(w, http.StatusBadRequest, errorBody("mapper_parsing_exception", err.Error()))
			return
		}
		s.indices[name] = &index{mappings: body.Mappings, fields: fields, docs: map[string]json.RawMessage{},
			visible: map[string]json.RawMessage{}, version: map[string]int64{}}
		write(w, http.StatusOK, map[string]any{"acknowledged": true, "shards_acknowledged": true, "index": name})
	case http.MethodDelete:
		if ix == nil {
			write(w, http.StatusNotFound, indexNotFound(name))
			return
		}
		delete(s.indices, name)
		write(w, http.StatusOK, map[string]any{"acknowledged": true})
	default:
		methodNotAllowed(w, r)
	}
}

// knownTypes are the field types the fake understands.
var knownTypes = map[string]bool{
	"keyword": true, "text": true, "long": true, "integer": true, "short": true, "double": true, "float": true,
	"boolean": true, "date": true, "geo_shape": true, "geo_point": true, "object": true,
}

// collectFields records the mapped type of every field under props.
func collectFields(props any, prefix string, out map[string]string) error {
	if props == nil {
		return nil
	}
	m, ok := props.(map[string]any)
	if !ok {
		return fmt.Errorf("failed to parse mapping: expected map for property [properties] on field [%s] but got a %T", prefix, props)
	}
	for name, def := range m {
		d, ok := def.(map[string]any)
		if !ok {
			return fmt.Errorf("failed to parse mapping: expected map for property [fields] on field [%s]", prefix+name)
		}
		typ, _ := d["type"].(string)
		if typ == "" && d["properties"] != nil {
			typ = "object"
		}
		if !knownTypes[typ] {
			return fmt.Errorf("failed to parse mapping: no handler for type [%v] declared on field [%s]", d["type"], prefix+name)
		}
		out[prefix+name] = typ
		if typ == "object" {
			if err := collectFields(d["properties"], prefix+name+".", out); err != nil {
				return err
			}
		}
	}
	return nil
}

// bulk serves _bulk: NDJSON pairs of action and source lines.
func (s *Server) bulk(w http.ResponseWriter, r *http.Request, defaultIndex string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bulkRequests++
	if len(s.rejectBulk) > 0 {
		status := s.rejectBulk[0]
		s.rejectBulk = s.rejectBulk[1:]
		kind := "es_rejected_execution_exception"
		if status >= 500 {
			kind = "unavailable_shards_exception"
		}
		write(w, status, errorBody(kind, "injected rejection of the whole request"))
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
		write(w, http.StatusNotAcceptable, errorBody("illegal_argument_exception", "Content-Type header ["+ct+"] is not supported"))
		return
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 100<<20)
	var items []map[string]any
	hasErrors := false
	start := time.Now()
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var action map[string]struct {
			Index       string `json:"_index"`
			ID          string `json:"_id"`
			Version     *int64 `json:"version"`
			VersionType string `json:"version_type"`
		}
		if err := json.Unmarshal(line, &action); err != nil || len(action) != 1 {
			write(w, http.StatusBadRequest, errorBody("illegal_argument_exception", "Malformed action/metadata line"))
			return
		}
		for op, meta := range action {
			name := meta.Index
			if name == "" {
				name = defaultIndex
			}
			var source []byte
			if op == "index" || op == "create" || op == "update" {
				if !sc.Scan() {
					write(w, http.StatusBadRequest, errorBody("illegal_argument_exception", "The bulk request must be terminated by a newline [\\n]"))
					return
				}
				source = append([]byte(nil), sc.Bytes()...)
			}
			if meta.VersionType != "" && meta.VersionType != "external" && meta.VersionType != "external_gte" {
				write(w, http.StatusBadRequest, errorBody("illegal_argument_exception", "version_type ["+meta.VersionType+"] is not supported by esfake"))
				return
			}
			var external *int64
			if meta.VersionType != "" {
				if meta.Version == nil {
					write(w, http.StatusBadRequest, errorBody("action_request_validation_exception", "Validation Failed: 1: an external version is required;"))
					return
				}
				external = meta.Version
			}
			res := s.bulkItem(op, name, meta.ID, source, external)
			if st, _ := res["status"].(int); st >= 300 && !(op == "delete" && st == http.StatusNotFound) {
				hasErrors = true
			}
			items = append(items, map[string]any{op: res})
		}
	}
	if err := sc.Err(); err != nil {
		write(w, http.StatusBadRequest, errorBody("illegal_argument_exception", err.Error()))
		return
	}
	write(w, http.StatusOK, map[string]any{"took": time.Since(start).Milliseconds(), "errors": hasErrors, "items": items})
}

// bulkItem applies one action and returns its result item.
// With an external version, Elasticsearch refuses (409) a version not
// above the stored one, the version of a deleted document included.
func (s *Server) bulkItem(op, name, id string, source []byte, external *int64) map[string]any {
	res := map[string]any{"_index": name, "_id": id}
	fail := func(status int, kind, reason string) map[string]any {
		res["status"] = status
		res["error"] = map[string]any{"type": kind, "reason": reason, "index": name}
		return res
	}
	if faults := s.itemFaults[id]; len(faults) > 0 {
		s.itemFaults[id] = faults[1:]
		if faults[0] == http.StatusTooManyRequests {
			return fail(faults[0], "es_rejected_execution_exception", "rejected execution (injected)")
		}
		return fail(faults[0], "unavailable_shards_exception", "primary shard is not active (injected)")
	}
	if op != "index" && op != "create" && op != "delete" {
		return fail(http.StatusBadRequest, "illegal_argument_exception", "esfake does not implement the ["+op+"] action")
	}
	if id == "" {
		return fail(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: an id is required;")
	}
	ix := s.indices[name]
	if ix == nil {
		if op == "delete" {
			return fail(http.StatusNotFound, "index_not_found_exception", "no such index ["+name+"]")
		}
		// Elasticsearch creates a missing index on write, dynamically mapped.
		ix = &index{mappings: map[string]any{}, fields: map[string]string{}, docs: map[string]json.RawMessage{},
			visible: map[string]json.RawMessage{}, version: map[string]int64{}}
		s.indices[name] = ix
	}
	if external != nil && *external <= ix.version[id] && ix.version[id] > 0 {
		return fail(http.StatusConflict, "version_conflict_engine_exception",
			fmt.Sprintf("[%s]: version conflict, current version [%d] is higher or equal to the one provided [%d]", id, ix.version[id], *external))
	}
	next := func() int64 {
		if external != nil {
			return *external
		}
		return ix.version[id] + 1
	}
	ix.seq++
	res["_seq_no"], res["_primary_term"] = ix.seq, 1
	res["_shards"] = map[string]any{"total": 1, "successful": 1, "failed": 0}
	if op == "delete" {
		if _, ok := ix.docs[id]; !ok {
			ix.version[id] = next() // a tombstone keeps the version
			res["result"], res["status"], res["_version"] = "not_found", http.StatusNotFound, ix.version[id]
			return res
		}
		delete(ix.docs, id)
		ix.version[id] = next()
		res["result"], res["status"], res["_version"] = "deleted", http.StatusOK, ix.version[id]
		return res
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(source))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fail(http.StatusBadRequest, "document_parsing_exception", "failed to parse: "+err.Error())
	}
	if err := checkDoc(ix.fields, doc, ""); err != nil {
		return fail(http.StatusBadRequest, "document_parsing_exception", err.Error())
	}
	_, exists := ix.docs[id]
	if exists && op == "create" {
		return fail(http.StatusConflict, "version_conflict_engine_exception", "["+id+"]: version conflict, document already exists")
	}
	ix.docs[id] = source
	ix.version[id] = next()
	res["_version"] = ix.version[id]
	if exists {
		res["result"], res["status"] = "updated", http.StatusOK
	} else {
		res["result"], res["status"] = "created", http.StatusCreated
	}
	return res
}

// checkDoc checks the mapped fields of a document as Elasticsearch's
// mappers would (numbers and booleans coerced from strings, as by default).
func checkDoc(fields map[string]string, doc map[string]any, prefix string) error {
	for k, v := range doc {
		path := prefix + k
		if v == nil {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("[1:1] failed to parse field [%s] of type [%s] in document: %s", path, fields[path], why)
		}
		switch fields[path] {
		case "long", "integer", "short":
			s := fmt.Sprint(v)
			if _, ok := v.(bool); ok {
				return bad("Current token (VALUE_TRUE) not numeric")
			}
			if f, err := strconv.ParseFloat(s, 64); err != nil || f != float64(int64(f)) {
				return bad(fmt.Sprintf("For input string: %q", s))
			}
		case "double", "float":
			if _, ok := v.(bool); ok {
				return bad("Current token (VALUE_TRUE) not numeric")
			}
			if _, err := strconv.ParseFloat(fmt.Sprint(v), 64); err != nil {
				return bad(fmt.Sprintf("For input string: %q", fmt.Sprint(v)))
			}
		case "boolean":
			if s := fmt.Sprint(v); s != "true" && s != "false" {
				return bad(fmt.Sprintf("Failed to parse value [%s] as only [true] or [false] are allowed.", s))
			}
		case "date":
			s, ok := v.(string)
			if !ok {
				if _, num := v.(json.Number); num {
					continue // epoch_millis
				}
				return bad("failed to parse date field")
			}
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				if _, err := time.Parse(time.DateOnly, s); err != nil {
					return bad(fmt.Sprintf("failed to parse date field [%s] with format [strict_date_optional_time||epoch_millis]", s))
				}
			}
		case "geo_shape":
			if err := checkGeoJSON(v); err != nil {
				return bad(err.Error())
			}
		case "object", "":
			if m, ok := v.(map[string]any); ok {
				if err := checkDoc(fields, m, path+"."); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkGeoJSON checks that v is a GeoJSON geometry Elasticsearch can parse.
func checkGeoJSON(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("shape must be an object consisting of type and coordinates")
	}
	typ, _ := m["type"].(string)
	switch strings.ToLower(typ) {
	case "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon":
		if _, ok := m["coordinates"].([]any); !ok {
			return fmt.Errorf("coordinates not included")
		}
	case "geometrycollection":
		gs, ok := m["geometries"].([]any)
		if !ok {
			return fmt.Errorf("geometries not included")
		}
		for _, g := range gs {
			if err := checkGeoJSON(g); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown geometry type: %q", typ)
	}
	return nil
}

func indexNotFound(name string) map[string]any {
	return errorBody("index_not_found_exception", "no such index ["+name+"]")
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	write(w, http.StatusMethodNotAllowed, errorBody("illegal_argument_exception",
		fmt.Sprintf("Incorrect HTTP method for uri [%s] and method [%s]", r.URL.Path, r.Method)))
}

// errorBody is Elasticsearch's error response.
func errorBody(kind, reason string) map[string]any {
	cause := map[string]any{"type": kind, "reason": reason}
	return map[string]any{"error": map[string]any{"root_cause": []any{cause}, "type": kind, "reason": reason}, "status": 0}
}

func write(w http.ResponseWriter, status int, body any) {
	if m, ok := body.(map[string]any); ok {
		if _, has := m["status"]; has {
			m["status"] = status
		}
	}
	b, _ := json.Marshal(body)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
