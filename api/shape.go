package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A struct field tagged wf:"nullable" takes a JSON null; every other member
// of a request body refuses one (checkShape). The OpenAPI document says of
// each nullable member what null means. A string field tagged
// wf:"nonempty" refuses "" (which its handler would take as absent).
const (
	nullableTag = "nullable"
	nonemptyTag = "nonempty"
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType        = reflect.TypeFor[time.Time]()
)

// checkShape walks a JSON body against the Go type it is decoded into and
// returns the first member (in member-name order, depth first) that the type
// cannot hold, at its JSON pointer into the body:
//
//   - null, unless the field is tagged wf:"nullable": encoding/json would
//     leave the field as it was, so null would silently mean "absent" (and
//     "dry_run": null would mean a real run);
//   - "", for a string field tagged wf:"nonempty";
//   - a value of the wrong JSON type, an integer out of its range, a time
//     that is not RFC 3339 (the pointer names the member as the client
//     wrote it, never a Go field or an embedded struct).
//
// Free-form members (json.RawMessage, any) are not looked into; unknown
// members are left to exactMembers and the decoder.
func checkShape(body []byte, t reflect.Type) *problem {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil // the decoder words it
	}
	ptr, msg := shapeOf(v, t, "")
	if msg == "" {
		return nil
	}
	return badRequest("%s: %s", displayPointer(ptr), msg).at(ptr, msg)
}

// shapeOf checks the value v at pointer ptr against the type t; it returns
// the pointer and message of the first fault ("" message when none).
func shapeOf(v any, t reflect.Type, ptr string) (string, string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface {
		return "", "" // free-form JSON, null included
	}
	if v == nil {
		return ptr, "must not be null (leave the member out for its default)"
	}
	switch {
	case t == timeType:
		s, ok := v.(string)
		if _, err := time.Parse(time.RFC3339Nano, s); !ok || err != nil {
			return ptr, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z"
		}
		return "", ""
	case reflect.PointerTo(t).Implements(jsonUnmarshaler):
		return "", "" // free-form JSON (json.RawMessage), or a type that reads itself
	case reflect.PointerTo(t).Implements(textUnmarshaler):
		if _, ok := v.(string); !ok {
			return ptr, "must be a string"
		}
		return "", ""
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return ptr, "must be a string, not " + jsonKind(v)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return ptr, "must be a boolean (true or false), not " + jsonKind(v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); !ok || err != nil {
			return ptr, fmt.Sprintf("must be an integer from %d to %d", -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if _, err := strconv.ParseUint(string(n), 10, t.Bits()); !ok || err != nil {
			return ptr, "must be an integer of 0 or more"
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if _, err := strconv.ParseFloat(string(n), t.Bits()); !ok || err != nil {
			return ptr, "must be a number"
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return ptr, "must be an array, not " + jsonKind(v)
		}
		for i, e := range arr {
			if p, msg := shapeOf(e, t.Elem(), ptr+"/"+strconv.Itoa(i)); msg != "" {
				return p, msg
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return ptr, "must be an object, not " + jsonKind(v)
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if p, msg := shapeOf(obj[k], t.Elem(), ptr+"/"+escapePointer(k)); msg != "" {
				return p, msg
			}
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return ptr, "must be an object, not " + jsonKind(v)
		}
		fields := map[string]reflect.StructField{}
		structFields(t, fields)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			f, known := fields[k]
			if !known {
				continue
			}
			tags := strings.Split(f.Tag.Get("wf"), ",")
			if obj[k] == nil && slices.Contains(tags, nullableTag) {
				continue
			}
			if obj[k] == "" && slices.Contains(tags, nonemptyTag) {
				return ptr + "/" + escapePointer(k), "must not be empty (leave the member out for its default)"
			}
			if p, msg := shapeOf(obj[k], f.Type, ptr+"/"+escapePointer(k)); msg != "" {
				return p, msg
			}
		}
	}
	return "", ""
}

// structFields adds a struct's fields (and its embedded structs' fields)
// by JSON name.
func structFields(t reflect.Type, out map[string]reflect.StructField) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			structFields(f.Type, out)
		case name != "":
			out[name] = f
		case f.IsExported():
			out[f.Name] = f
		}
	}
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}
