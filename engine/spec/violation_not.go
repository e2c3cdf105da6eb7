package spec

import (
	"slices"
	"strings"
)

// notMessage words a violation of a "not" keyword: what the excluded
// schema (not, the keyword's value) describes, refused in plain words
// ("must not be a path with a '..' segment"; "must not have both run_at
// and run_in"), rather than the library's "not failed". A "title" on the
// excluded schema names it; otherwise its pattern, enum, const, type,
// required fields and anyOf/oneOf/allOf alternatives are spelled out.
func notMessage(not, value any) string {
	got := ""
	if isScalar(value) {
		got = "; got " + describeValue(value)
	}
	if what, ok := refused(not); ok {
		return "must not " + what + got
	}
	return "is a value this field refuses (it matches what the schema's \"not\" excludes)" + got
}

// refused returns what a value excluded by schema does, as a phrase that
// follows "must not" ("match the pattern ^pg_", "be one of a, b"); false
// when the schema holds something it cannot put in plain words.
func refused(schema any) (string, bool) {
	m, ok := schema.(map[string]any)
	if !ok {
		return "", false
	}
	if title, ok := m["title"].(string); ok && title != "" {
		return "be " + title, true
	}
	var parts []string
	_, hasConst := m["const"]
	_, hasEnum := m["enum"]
	switch {
	case hasConst:
		parts = append(parts, "be "+plainText(m["const"]))
	case hasEnum:
		values, ok := m["enum"].([]any)
		if !ok || len(values) == 0 {
			return "", false
		}
		names := make([]string, len(values))
		for i, v := range values {
			names[i] = plainText(v)
		}
		if len(names) == 1 {
			parts = append(parts, "be "+names[0])
		} else {
			parts = append(parts, "be one of "+strings.Join(names, ", "))
		}
	case m["type"] != nil:
		what, ok := typePhrase(m["type"])
		if !ok {
			return "", false
		}
		parts = append(parts, "be "+what)
	}
	if p, ok := m["pattern"].(string); ok {
		parts = append(parts, "match the pattern "+p)
	}
	if req, ok := m["required"].([]any); ok && len(req) > 0 {
		names := make([]string, 0, len(req))
		for _, r := range req {
			if s, isStr := r.(string); isStr {
				names = append(names, s)
			}
		}
		parts = append(parts, haveFields(names))
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		alts, ok := m[kw].([]any)
		if !ok {
			continue
		}
		var phrases []string
		for _, a := range alts {
			p, ok := refused(a)
			if !ok {
				return "", false
			}
			phrases = append(phrases, p)
		}
		join := " or "
		if kw == "allOf" {
			join = " and "
		}
		parts = append(parts, strings.Join(phrases, join))
	}
	// A keyword not worded above would make the phrase say less than the
	// schema refuses: give up instead.
	for k := range m {
		if !slices.Contains(notWorded, k) {
			return "", false
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, " and "), true
}

// notWorded are the keywords refused puts in words, and the annotations it
// may ignore.
var notWorded = []string{"const", "enum", "type", "pattern", "required", "anyOf", "oneOf", "allOf",
	"title", "description", "$comment", "examples"}

// typePhrase names a JSON type ("a string", "null"), or several ("a string
// or a number").
func typePhrase(t any) (string, bool) {
	one := func(s string) string {
		switch s {
		case "null":
			return "null"
		case "array", "object", "integer":
			return "an " + s
		}
		return "a " + s
	}
	switch v := t.(type) {
	case string:
		return one(v), true
	case []any:
		var names []string
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return "", false
			}
			names = append(names, one(s))
		}
		return strings.Join(names, " or "), len(names) > 0
	}
	return "", false
}

// haveFields says that an object has all the named fields: "have the
// field a", "have both a and b", "have all of a, b and c".
func haveFields(names []string) string {
	switch len(names) {
	case 1:
		return "have the field " + names[0]
	case 2:
		return "have both " + names[0] + " and " + names[1]
	}
	return "have all of " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
