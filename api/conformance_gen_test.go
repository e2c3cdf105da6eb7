package api_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// schemaGen makes JSON values from the OpenAPI document's schemas, for the
// conformance test. It need not be exact: whether a request it made is
// valid is decided by the document (openapi3filter), not by the generator.
// Strings are drawn from pools (values wf knows, by member or parameter
// name, and shapes of common formats) and kept only when the schema takes
// them, so most generated requests are valid and reach past the checks.
type schemaGen struct {
	r *rand.Rand
	// pools are candidate strings by member or parameter name.
	pools map[string][]string
}

// genericStrings are candidates for any string.
var genericStrings = []string{"a", "x1", "cat-a", "roads", "A1", "DEM", "noop", "system", "s_cat_a", "tasks", "events",
	"5m", "90s", "geojson", "EPSG:4326", "0190b5b4-7d7e-7c1a-9f6e-3c2f1a2b4c5d", "2026-01-02T15:04:05Z", "1h",
	"task_type", "tenant", "vector", "active", "PENDING", "DEAD_LETTER", "gs://bucket/a.geojson", "a.geojson"}

// schemaOK says whether v is valid by s.
func schemaOK(s *openapi3.Schema, v any) bool {
	return s.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()) == nil
}

// value returns a value for schema s of a member or parameter named name.
func (g *schemaGen) value(s *openapi3.Schema, name string, depth int) any {
	if s == nil {
		return "a"
	}
	switch {
	case len(s.OneOf) > 0:
		return g.value(s.OneOf[g.r.IntN(len(s.OneOf))].Value, name, depth)
	case len(s.AnyOf) > 0:
		return g.value(s.AnyOf[g.r.IntN(len(s.AnyOf))].Value, name, depth)
	case s.Const != nil:
		return s.Const
	case len(s.Enum) > 0:
		return s.Enum[g.r.IntN(len(s.Enum))]
	}
	if s.Type != nil && s.Type.IncludesNull() && g.r.IntN(8) == 0 {
		return nil
	}
	typ := ""
	if s.Type != nil {
		types := slices.DeleteFunc(slices.Clone(s.Type.Slice()), func(t string) bool { return t == "null" })
		if len(types) > 0 {
			typ = types[g.r.IntN(len(types))]
		}
	}
	if typ == "" && (len(s.Properties) > 0 || len(s.AllOf) > 0) {
		typ = "object"
	}
	switch typ {
	case "string":
		return g.str(s, name)
	case "integer":
		return g.number(s, true)
	case "number":
		return g.number(s, false)
	case "boolean":
		return g.r.IntN(2) == 0
	case "array":
		var out []any
		n := int(s.MinItems) + g.r.IntN(3)
		if s.MaxItems != nil && uint64(n) > *s.MaxItems {
			n = int(*s.MaxItems)
		}
		for range n {
			var item *openapi3.Schema
			if s.Items != nil {
				item = s.Items.Value
			}
			out = append(out, g.value(item, name, depth+1))
		}
		if out == nil {
			out = []any{}
		}
		return out
	case "object":
		return g.object(s, depth)
	}
	return "a"
}

// object returns an object: every required member, some optional ones.
func (g *schemaGen) object(s *openapi3.Schema, depth int) map[string]any {
	out := map[string]any{}
	props := map[string]*openapi3.Schema{}
	required := slices.Clone(s.Required)
	for _, sub := range s.AllOf {
		for k, p := range sub.Value.Properties {
			props[k] = p.Value
		}
		required = append(required, sub.Value.Required...)
	}
	for k, p := range s.Properties {
		props[k] = p.Value
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if depth > 3 {
			break
		}
		if slices.Contains(required, k) || g.r.IntN(3) == 0 {
			out[k] = g.value(props[k], k, depth+1)
		}
	}
	if len(props) == 0 && g.r.IntN(2) == 0 && (s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has) {
		out["k"] = "v" // a free-form object
	}
	return out
}

// str returns a string the schema takes, if the pools hold one.
func (g *schemaGen) str(s *openapi3.Schema, name string) any {
	var cands []string
	cands = append(cands, g.pools[name]...)
	for _, e := range s.Examples {
		if v, ok := e.(string); ok {
			cands = append(cands, v)
		}
	}
	switch s.Format {
	case "date-time":
		cands = append(cands, "2026-01-02T15:04:05Z", "2030-06-01T00:00:00.5+02:00")
	case "uuid":
		cands = append(cands, g.pools["uuid"]...)
	}
	cands = append(cands, genericStrings...)
	cands = append(cands, strings.Repeat("b", int(s.MinLength)+g.r.IntN(4)))
	var ok []string
	for _, c := range cands {
		if schemaOK(s, c) {
			ok = append(ok, c)
		}
	}
	if len(ok) == 0 {
		return "a"
	}
	// Prefer a pooled value of the name: it reaches past look-ups.
	if p := g.pools[name]; len(p) > 0 && g.r.IntN(4) > 0 {
		for _, c := range ok {
			if slices.Contains(p, c) {
				return c
			}
		}
	}
	return ok[g.r.IntN(len(ok))]
}

// number returns a number within the schema's range, small ones likelier.
func (g *schemaGen) number(s *openapi3.Schema, integer bool) any {
	lo, hi := 0.0, 100.0
	if s.Min != nil {
		lo = *s.Min
		if s.Max == nil {
			hi = lo + 100
		}
	}
	if s.Max != nil {
		hi = *s.Max
		if s.Min == nil {
			lo = hi - 100
		}
	}
	var v float64
	switch g.r.IntN(4) {
	case 0:
		v = lo
	case 1:
		v = hi
	default:
		v = lo + g.r.Float64()*min(hi-lo, 50)
	}
	if integer {
		return int64(v)
	}
	return v
}

// mutation is one way to make a request that the document may call
// invalid; it returns what it did ("" when it could not apply).
type mutation func(g *schemaGen, q *confRequest) string

// mutations are applied to about half the generated requests.
var mutations = []mutation{
	// A body member set to null.
	func(g *schemaGen, q *confRequest) string {
		return g.mutateMember(q, func(string, any) any { return nil }, "null")
	},
	// A body member of the wrong type.
	func(g *schemaGen, q *confRequest) string {
		return g.mutateMember(q, func(_ string, v any) any {
			switch v.(type) {
			case string:
				return 7
			case map[string]any:
				return []any{1}
			}
			return "seven"
		}, "wrong type")
	},
	// A string member made empty, a number made huge.
	func(g *schemaGen, q *confRequest) string {
		return g.mutateMember(q, func(_ string, v any) any {
			switch v.(type) {
			case string:
				return ""
			case int64, float64, int:
				return 1e12
			}
			return v
		}, "edge value")
	},
	// A string member with a control character or a line break.
	func(g *schemaGen, q *confRequest) string {
		return g.mutateMember(q, func(_ string, v any) any {
			if s, ok := v.(string); ok {
				return s + []string{"\x01", "\n", "\t", "\u2028"}[g.r.IntN(4)]
			}
			return v
		}, "control character")
	},
	// A member dropped.
	func(g *schemaGen, q *confRequest) string {
		if len(q.body) == 0 {
			return ""
		}
		k := g.pick(q.body)
		delete(q.body, k)
		return "dropped /" + k
	},
	// An unknown member.
	func(_ *schemaGen, q *confRequest) string {
		if q.body == nil {
			return ""
		}
		q.body["zz_unknown"] = 1
		return "unknown member"
	},
	// A query parameter empty, or of a wrong shape.
	func(g *schemaGen, q *confRequest) string {
		if len(q.params) == 0 {
			return ""
		}
		i := g.r.IntN(len(q.params))
		bads := []string{"", " ", ",", "abc", "-1", "99999999999", "a\x01b"}
		bad := bads[g.r.IntN(len(bads))]
		q.params[i][1] = bad
		return fmt.Sprintf("query %s=%q", q.params[i][0], bad)
	},
	// A path parameter of a wrong shape.
	func(g *schemaGen, q *confRequest) string {
		if len(q.pathParams) == 0 {
			return ""
		}
		names := slices.Sorted(maps.Keys(q.pathParams))
		n := names[g.r.IntN(len(names))]
		q.pathParams[n] = []string{"NOT_an-id", "0190b5b4-7d7e-4c1a-9f6e-3c2f1a2b4c5d", "-1", "x y"}[g.r.IntN(4)]
		return "path " + n + "=" + q.pathParams[n]
	},
}

// mutateMember replaces a random top-level body member with f's value.
func (g *schemaGen) mutateMember(q *confRequest, f func(string, any) any, what string) string {
	if len(q.body) == 0 {
		return ""
	}
	k := g.pick(q.body)
	q.body[k] = f(k, q.body[k])
	return what + " at /" + k
}

// pick returns a random key of m.
func (g *schemaGen) pick(m map[string]any) string {
	keys := slices.Sorted(maps.Keys(m))
	return keys[g.r.IntN(len(keys))]
}
