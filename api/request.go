package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// readBody reads a request body of at most the configured size. It answers
// 413 for a larger body, 415 for a body that is not JSON, and 400 for a body
// that is not one JSON object.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *problem) {
	if r.ContentLength > s.maxBody {
		return nil, tooLarge(s.maxBody)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" || r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			p := newProblem(http.StatusUnsupportedMediaType, typeMediaType, "Unsupported media type",
				"send the body as JSON with Content-Type: application/json (got %q)", ct)
			p.Errors = []fieldError{{Parameter: "Content-Type", Message: "must be application/json"}}
			p.header = http.Header{"Accept-Post": {"application/json"}}
			return nil, p
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, tooLarge(s.maxBody)
	}
	if err != nil {
		return nil, badRequest("error reading the request body: %v", err).at("", "could not be read")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, badRequest("the request body is empty; expected a JSON object").at("", "is empty; expected a JSON object")
	}
	if e := checkJSONText(trimmed, s.maxDepth); e != nil {
		return nil, badRequest("%s: %s", displayPointer(e.pointer), e.message).at(e.pointer, e.message)
	}
	if trimmed[0] != '{' {
		return nil, badRequest("the request body must be a JSON object").at("", "must be a JSON object")
	}
	return trimmed, nil
}

// displayPointer shows a JSON pointer in a message ("" is the whole body).
func displayPointer(pointer string) string {
	if pointer == "" {
		return "the request body"
	}
	return pointer
}

func tooLarge(limit int64) *problem {
	p := newProblem(http.StatusRequestEntityTooLarge, typeTooLarge, "Request body too large",
		"the request body is larger than the limit of %d bytes (http.max_body_bytes)", limit)
	return p.at("", fmt.Sprintf("is larger than %d bytes", limit))
}

// decodeBody reads the body into v strictly: unknown fields, wrong types,
// malformed JSON and data after the object are 400s naming the field.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) *problem {
	body, p := s.readBody(w, r)
	if p != nil {
		return p
	}
	return decodeStrict(body, v)
}

// decodeStrict decodes one JSON object into v, rejecting unknown fields,
// member names that match a field only when case is ignored (encoding/json
// would take "Task_Type" for task_type), wrong types and null where the
// field is not nullable (checkShape).
func decodeStrict(body []byte, v any) *problem {
	if p := exactMembers(body, v); p != nil {
		return p
	}
	if p := checkShape(body, reflect.TypeOf(v)); p != nil {
		return p
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("unexpected data after the JSON object")
	}
	return nil
}

// jsonProblem words a decoding error with the pointer of the field at fault.
func jsonProblem(err error) *problem {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badRequest("the request body is not valid JSON: %s (at byte %d)", syn.Error(), syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("the request body is not valid JSON: it ends early")
	case errors.As(err, &typ):
		ptr := "/" + strings.ReplaceAll(typ.Field, ".", "/")
		msg := fmt.Sprintf("must be %s, not %s", jsonTypeName(typ.Type.Kind().String()), typ.Value)
		return badRequest("%s: %s", ptr, msg).at(ptr, msg)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		ptr := "/" + strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
		return badRequest("unknown field %q", name).at(ptr, "unknown field")
	}
	return badRequest("the request body is not valid: %v", err)
}

// jsonTypeName names a Go kind as a JSON type.
func jsonTypeName(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "map", kind == "struct", kind == "ptr":
		return "an object"
	}
	return "of another type"
}

// taskID is a task id taken from a path.
type taskID struct{ uuid.UUID }

// pathTaskID parses the {task_id} path parameter: a UUIDv7.
func pathTaskID(r *http.Request, name string) (taskID, *problem) {
	raw := r.PathValue(name)
	id, err := uuid.Parse(raw)
	if err != nil || !store.IsV7(id) || len(raw) != 36 {
		return taskID{}, invalidParameter(name, "must be a UUIDv7 (like 0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d)")
	}
	return taskID{id}, nil
}

// pathCatalogID parses a catalog or collection id path parameter.
func pathCatalogID(r *http.Request, name string) (string, *problem) {
	raw := r.PathValue(name)
	if !registry.ValidID(raw) {
		return "", invalidParameter(name, "must be %s", registry.IDRule)
	}
	return raw, nil
}

// pathCatalog parses the catalog_id path parameter of a catalog the token
// may use: one it may not see is not found.
func pathCatalog(r *http.Request, p *principal) (string, *problem) {
	id, prob := pathCatalogID(r, "catalog_id")
	if prob != nil {
		return "", prob
	}
	if !p.canUseCatalog(id) {
		return "", catalogNotFound(id)
	}
	return id, nil
}

// pathCollection parses the catalog_id and collection_id path parameters
// of a collection the token may use: one it may not see is not found.
func pathCollection(r *http.Request, p *principal) (catalogID, id string, prob *problem) {
	if catalogID, prob = pathCatalogID(r, "catalog_id"); prob != nil {
		return "", "", prob
	}
	if id, prob = pathCatalogID(r, "collection_id"); prob != nil {
		return "", "", prob
	}
	if !p.canUseCatalog(catalogID) {
		return "", "", collectionNotFound(catalogID, id)
	}
	return catalogID, id, nil
}

// taskNotFound words a failed task look-up.
func (s *Server) taskNotFound(id taskID, err error) error {
	if errors.Is(err, wftype.ErrNotFound) {
		return notFound("no task %s", id.UUID)
	}
	return err
}

// query checks a request's query parameters: only the allowed names, each
// at most once unless repeatable.
type query struct {
	values url.Values
}

// parseQuery rejects malformed, unknown, repeated and empty parameters
// (?limit= and ?limit alike): each refusal names its parameter, and a name
// or value that is not valid UTF-8 or holds a control character (NUL among
// them) is refused before it reaches a statement.
func parseQuery(r *http.Request, single []string, repeatable []string) (query, *problem) {
	vals := url.Values{}
	for _, part := range strings.Split(r.URL.RawQuery, "&") {
		if part == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return query{}, invalidParameter(strings.ToValidUTF8(rawName, "\uFFFD"), "its name is not percent-encoded correctly")
		}
		if msg := checkText(name); msg != "" {
			return query{}, invalidParameter(strings.ToValidUTF8(name, "\uFFFD"), "its name %s", msg)
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return query{}, invalidParameter(name, "is not percent-encoded correctly")
		}
		if msg := checkText(value); msg != "" {
			return query{}, invalidParameter(name, "%s", msg)
		}
		if value == "" {
			// An empty value is no value: ?limit= is refused as ?limit=abc
			// is, never taken as the default.
			return query{}, invalidParameter(name, "is empty: give a value, or leave the parameter out for its default")
		}
		vals[name] = append(vals[name], value)
	}
	for name, vs := range vals {
		switch {
		case slices.Contains(repeatable, name):
			for _, v := range vs {
				for part := range strings.SplitSeq(v, ",") {
					if strings.TrimSpace(part) == "" {
						// ?status=, would otherwise filter by nothing.
						return query{}, invalidParameter(name, "has an empty item: separate values by single commas")
					}
				}
			}
		case slices.Contains(single, name):
			if len(vs) > 1 {
				return query{}, invalidParameter(name, "may be given once")
			}
		default:
			return query{}, invalidParameter(name, "unknown query parameter (known: %s)", strings.Join(append(slices.Clone(single), repeatable...), ", "))
		}
	}
	return query{values: vals}, nil
}

// get returns a single parameter ("" when absent).
func (q query) get(name string) string { return q.values.Get(name) }

// list returns a repeatable parameter, also split on commas.
func (q query) list(name string) []string {
	var out []string
	for _, v := range q.values[name] {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// limit parses the limit parameter: def when absent, 1..max.
func (q query) limit(def, max int) (int, *problem) {
	raw := q.get("limit")
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > max {
		return 0, invalidParameter("limit", "must be an integer from 1 to %d", max)
	}
	return n, nil
}

// time parses an RFC 3339 time parameter (nil when absent).
func (q query) time(name string) (*time.Time, *problem) {
	raw := q.get(name)
	if raw == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return nil, invalidParameter(name, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return &t, nil
}

// cursor is the opaque position of a keyset-paginated list: a kind (so a
// cursor of one list is refused by another), and the last row's time and id.
type cursor struct {
	Kind string    `json:"k"`
	Time time.Time `json:"t,omitzero"`
	ID   string    `json:"i"`
}

// encode returns the cursor as an opaque URL-safe string.
func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor parses the cursor parameter (nil when absent).
func (q query) cursor(kind string) (*cursor, *problem) {
	raw := q.get("cursor")
	if raw == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	var c cursor
	if err != nil || len(b) > 512 || json.Unmarshal(b, &c) != nil || c.Kind != kind || c.ID == "" || checkText(c.ID) != "" {
		return nil, invalidParameter("cursor", "is not a cursor of this list; pass next_cursor from the previous page unchanged")
	}
	return &c, nil
}

// uuidOf parses the id of a task or event cursor.
func (c *cursor) uuidOf() (*uuid.UUID, *time.Time, *problem) {
	id, err := uuid.Parse(c.ID)
	if err != nil || !store.IsV7(id) {
		return nil, nil, invalidParameter("cursor", "is not a cursor of this list; pass next_cursor from the previous page unchanged")
	}
	t := c.Time
	if t.IsZero() {
		t = store.IDTime(id)
	}
	return &id, &t, nil
}

// exactMembers refuses a member of the body's object whose name is not
// exactly one of the JSON names of v's struct fields.
func exactMembers(body []byte, v any) *problem {
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil // the decoder words it
	}
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	known := map[string]bool{}
	jsonFieldNames(t, known)
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if !known[name] {
			return badRequest("unknown field %q (names are case-sensitive)", name).at("/"+escapePointer(name), "unknown field (names are case-sensitive)")
		}
	}
	return nil
}

// jsonFieldNames adds the JSON names of a struct's fields (and of its
// embedded structs' fields) to names.
func jsonFieldNames(t reflect.Type, names map[string]bool) {
	if t.Kind() != reflect.Struct {
		return
	}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			jsonFieldNames(f.Type, names)
		case name != "":
			names[name] = true
		case f.IsExported():
			names[f.Name] = true
		}
	}
}
