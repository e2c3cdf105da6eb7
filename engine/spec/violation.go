package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/wfhq/wf/internal/editdist"
)

// violationKind tells how a schema violation is placed and worded.
type violationKind int

const (
	// violationValue: the value at ptr is wrong.
	violationValue violationKind = iota
	// violationMissing: the object at ptr lacks the required field.
	violationMissing
	// violationUnknown: the object at ptr has a field its schema does not allow.
	violationUnknown
)

// violation is one leaf of a JSON Schema validation error, worded as what
// was expected.
type violation struct {
	kind     violationKind
	ptr      string   // instance location, escaped like the index of a document
	field    string   // the missing or unknown field
	expected []string // for an unknown field: the fields allowed there
	message  string   // for violationValue
	schema   any      // for a missing field: its schema, when the object's schema declares it
	value    any      // for an unknown field: its value
}

// rawSchemas maps a schema resource URL to its decoded JSON, so that the
// keyword behind a violation can be read (enum values, allowed fields, the
// errorMessage annotation editors show too).
type rawSchemas map[string]any

// keyword returns the schema object holding the keyword an error points at.
func (r rawSchemas) keyword(absLocation string) map[string]any {
	url, frag, _ := strings.Cut(absLocation, "#")
	doc, ok := r[url]
	if !ok {
		return nil
	}
	v, ok := lookupPointer(doc, parentPointer(frag))
	if !ok {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

// resolve follows the $ref of schema, found in the resource of location
// (an absolute keyword location), to the schema it names, when it is one of
// the raw schemas; otherwise it returns schema.
func (r rawSchemas) resolve(location string, schema any) any {
	base, _, _ := strings.Cut(location, "#")
	for range 8 { // a chain of $refs, bounded
		m, _ := schema.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			return schema
		}
		url, frag, _ := strings.Cut(ref, "#")
		switch {
		case url == "":
			url = base
		case !strings.Contains(url, ":"):
			url = base[:strings.LastIndexByte(base, '/')+1] + url
		}
		doc, known := r[url]
		if !known {
			return schema
		}
		target, found := lookupPointer(doc, frag)
		if !found {
			return schema
		}
		schema, base = target, url
	}
	return schema
}

// violations flattens a validation error into its leaves. instance is the
// value that was validated.
func violations(err error, raw rawSchemas, instance any) []violation {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []violation{{message: err.Error()}}
	}
	var out []violation
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, leafViolations(e, raw, instance)...)
			return
		}
		causes := e.Causes
		if kw := lastToken(e.KeywordLocation); kw == "anyOf" || kw == "oneOf" {
			if merged, ok := mergeTypeAlternatives(e, instance); ok {
				out = append(out, merged)
				return
			}
			causes = dropTypeMismatches(causes)
		}
		for _, c := range causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// lastToken returns the last token of a keyword location.
func lastToken(loc string) string { return loc[strings.LastIndexByte(loc, '/')+1:] }

// isTypeMismatch reports whether an alternative failed on its type alone.
func isTypeMismatch(e *jsonschema.ValidationError) bool {
	return len(e.Causes) == 0 && lastToken(e.KeywordLocation) == "type"
}

// dropTypeMismatches keeps, among the alternatives of an anyOf or oneOf, the
// ones that failed on something else than their type: those are what the
// author meant.
func dropTypeMismatches(causes []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	kept := slices.DeleteFunc(slices.Clone(causes), isTypeMismatch)
	if len(kept) == 0 {
		return causes
	}
	return kept
}

// mergeTypeAlternatives words alternatives that all failed on their type as
// one violation: expected string or array, got number.
func mergeTypeAlternatives(e *jsonschema.ValidationError, instance any) (violation, bool) {
	var types []string
	for _, c := range e.Causes {
		if !isTypeMismatch(c) || c.InstanceLocation != e.InstanceLocation {
			return violation{}, false
		}
		want, _, ok := strings.Cut(strings.TrimPrefix(c.Message, "expected "), ", but got ")
		if !ok {
			return violation{}, false
		}
		types = append(types, want)
	}
	value, _ := lookupPointer(instance, e.InstanceLocation)
	return violation{ptr: e.InstanceLocation, message: "expected " + strings.Join(types, " or ") + ", got " + jsonKind(value)}, true
}

// jsonKind names the JSON type of a value as schemas do.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "number"
}

// leafViolations words one leaf error.
func leafViolations(e *jsonschema.ValidationError, raw rawSchemas, instance any) []violation {
	kw := lastToken(e.KeywordLocation)
	sch := raw.keyword(e.AbsoluteKeywordLocation)
	value, _ := lookupPointer(instance, e.InstanceLocation)
	obj, _ := value.(map[string]any)
	switch kw {
	case "required":
		if req, ok := sch["required"].([]any); ok && obj != nil {
			var out []violation
			props, _ := sch["properties"].(map[string]any)
			for _, r := range req {
				if name, isStr := r.(string); isStr {
					if _, present := obj[name]; !present {
						out = append(out, violation{kind: violationMissing, ptr: e.InstanceLocation, field: name,
							schema: raw.resolve(e.AbsoluteKeywordLocation, props[name])})
					}
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	case "additionalProperties":
		if sch != nil && obj != nil {
			return unknownFields(e.InstanceLocation, sch, obj)
		}
	case "uniqueItems":
		var i, j int
		if _, err := fmt.Sscanf(e.Message, "items at index %d and %d are equal", &i, &j); err == nil {
			first, second := min(i, j), max(i, j)
			return []violation{{
				ptr:     e.InstanceLocation + "/" + strconv.Itoa(second),
				message: fmt.Sprintf("repeats item [%d]; items must be unique", first),
			}}
		}
	}
	return []violation{{ptr: e.InstanceLocation, message: valueMessage(kw, e.Message, sch, value)}}
}

// unknownFields lists the fields of obj that sch neither names nor matches.
func unknownFields(ptr string, sch, obj map[string]any) []violation {
	props, _ := sch["properties"].(map[string]any)
	var patterns []*regexp.Regexp
	if pp, ok := sch["patternProperties"].(map[string]any); ok {
		for p := range pp {
			if re, err := regexp.Compile(p); err == nil {
				patterns = append(patterns, re)
			}
		}
	}
	expected := make([]string, 0, len(props))
	for k := range props {
		expected = append(expected, k)
	}
	slices.Sort(expected)
	var out []violation
	for k := range obj {
		if _, ok := props[k]; ok {
			continue
		}
		if slices.ContainsFunc(patterns, func(re *regexp.Regexp) bool { return re.MatchString(k) }) {
			continue
		}
		out = append(out, violation{kind: violationUnknown, ptr: ptr, field: k, expected: expected, value: obj[k]})
	}
	slices.SortFunc(out, func(a, b violation) int { return strings.Compare(a.field, b.field) })
	return out
}

// valueMessage words a violation of keyword kw by value. sch is the schema
// object holding the keyword (nil when unknown); msg is the library's own
// wording, the fallback.
func valueMessage(kw, msg string, sch map[string]any, value any) string {
	got := "; got " + describeValue(value)
	if custom, ok := sch["patternErrorMessage"].(string); ok && kw == "pattern" {
		return custom + got
	}
	if custom, ok := sch["errorMessage"].(string); ok {
		if isScalar(value) {
			return custom + got
		}
		return custom
	}
	if b, ok := boundMessages[kw]; ok {
		limit := jsonText(sch[kw])
		switch {
		case b.emptyAtOne && limit == "1":
			return "must not be empty"
		case b.showGot:
			return b.before + limit + b.after + got
		}
		return b.before + limit + b.after
	}
	switch kw {
	case "type":
		return strings.Replace(msg, ", but got ", ", got ", 1)
	case "enum":
		if values, ok := sch["enum"].([]any); ok {
			names := make([]string, len(values))
			for i, v := range values {
				names[i] = plainText(v)
			}
			if len(names) == 1 {
				return "must be " + names[0] + got
			}
			return "must be one of " + strings.Join(names, ", ") + got
		}
	case "const":
		if c, ok := sch["const"]; ok {
			return "must be " + plainText(c) + got
		}
	case "pattern":
		if p, ok := sch["pattern"].(string); ok {
			return "must match the pattern " + p + got
		}
	case "not":
		return notMessage(sch["not"], value)
	case "uniqueItems":
		return "items must be unique (" + strings.Replace(msg, "items at index", "items", 1) + ")"
	case "format":
		if f, ok := sch["format"].(string); ok {
			return "expected a valid " + f + got
		}
		if m := formatMessageRE.FindStringSubmatch(msg); m != nil {
			return "expected a valid " + m[1] + got
		}
	}
	if sch == nil && (kw == "enum" || kw == "const") {
		return msg + got
	}
	return msg
}

// boundMessages word the violations of the keywords that bound a value (a
// number, a length, a count): the text before the bound and after it, whether
// the value got follows, and whether a lower bound of 1 reads "must not be
// empty".
var boundMessages = map[string]struct {
	before, after       string
	showGot, emptyAtOne bool
}{
	"minimum":          {before: "must be >= ", showGot: true},
	"maximum":          {before: "must be <= ", showGot: true},
	"exclusiveMinimum": {before: "must be > ", showGot: true},
	"exclusiveMaximum": {before: "must be < ", showGot: true},
	"multipleOf":       {before: "must be a multiple of ", showGot: true},
	"minLength":        {before: "must be at least ", after: " characters long", showGot: true, emptyAtOne: true},
	"maxLength":        {before: "must be at most ", after: " characters long"},
	"minItems":         {before: "must have at least ", after: " items", emptyAtOne: true},
	"maxItems":         {before: "must have at most ", after: " items"},
	"minProperties":    {before: "must have at least ", after: " fields", emptyAtOne: true},
	"maxProperties":    {before: "must have at most ", after: " fields"},
}

// formatMessageRE reads the library's wording of a format violation.
var formatMessageRE = regexp.MustCompile(`is not valid '([^']+)'$`)

// isScalar reports whether v is a string, number, boolean or null.
func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// describeValue shows a value in a message: scalars as JSON, containers by kind.
func describeValue(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return jsonText(v)
}

// plainText shows a schema constant: strings bare, the rest as JSON.
func plainText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return jsonText(v)
}

// jsonText renders v as compact JSON.
func jsonText(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// suggest returns the candidate closest to word when it is a likely typo:
// at most two edits away, and no more edits than half the word's length.
func suggest(word string, candidates []string) (string, bool) {
	best, bestDist := "", 3
	for _, c := range slices.Sorted(slices.Values(candidates)) {
		if d := editdist.Levenshtein(word, c); d < bestDist && 2*d <= len([]rune(word)) {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// unknownFieldHint says what was expected instead of an unknown field.
func unknownFieldHint(v violation) string {
	if s, ok := suggest(v.field, v.expected); ok {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	if len(v.expected) > 0 {
		return "; expected one of " + strings.Join(v.expected, ", ")
	}
	return ""
}

// pairMisspelt reports a misspelt required field once: when an object has
// an unknown field and lacks a required one, the unknown field is most
// likely the required one misspelt (comand for command) or misnamed
// (every for cron). Such a missing-field violation is dropped, and the
// unknown field's hint names the required field: by "did you mean" when it
// is close, else (one unknown and one missing field in the object) as the
// required field it must be. dropped lists the dropped violations.
func pairMisspelt(vs []violation) (kept, dropped []violation) {
	missing := map[string][]string{} // object pointer → its missing fields
	schemas := map[string]any{}      // pointer of a missing field → its schema
	unknown := map[string][]int{}    // object pointer → the indexes of its unknown fields
	for i, v := range vs {
		switch {
		case v.kind == violationMissing:
			missing[v.ptr] = append(missing[v.ptr], v.field)
			schemas[joinPointer(v.ptr, v.field)] = v.schema
		case v.kind == violationUnknown && v.message == "":
			unknown[v.ptr] = append(unknown[v.ptr], i)
		}
	}
	paired := map[string]bool{} // pointer of the missing field → paired
	for ptr, idx := range unknown {
		var unpaired []int
		for _, i := range idx {
			if sug, ok := suggest(vs[i].field, vs[i].expected); ok && slices.Contains(missing[ptr], sug) && !paired[joinPointer(ptr, sug)] {
				paired[joinPointer(ptr, sug)] = true
				continue
			}
			unpaired = append(unpaired, i)
		}
		var left []string
		for _, m := range missing[ptr] {
			if !paired[joinPointer(ptr, m)] {
				left = append(left, m)
			}
		}
		if len(unpaired) == 1 && len(left) == 1 {
			i := unpaired[0]
			if _, close := suggest(vs[i].field, vs[i].expected); !close && typeFits(schemas[joinPointer(ptr, left[0])], vs[i].value) {
				paired[joinPointer(ptr, left[0])] = true
				vs[i].message = fmt.Sprintf("; did you mean %q? It is required, and missing", left[0])
			}
		}
	}
	for _, v := range vs {
		if v.kind == violationMissing && paired[joinPointer(v.ptr, v.field)] {
			dropped = append(dropped, v)
			continue
		}
		kept = append(kept, v)
	}
	return kept, dropped
}

// typeFits reports whether value may be of the type schema declares: the
// unknown field holding it may then be the missing one under another name.
// A schema that declares no type (a $ref, say) fits every value.
func typeFits(schema, value any) bool {
	m, _ := schema.(map[string]any)
	switch typ := m["type"].(type) {
	case string:
		return typ == jsonKind(value) || (typ == "integer" && jsonKind(value) == "number")
	case []any:
		for _, t := range typ {
			if typeFits(map[string]any{"type": t}, value) {
				return true
			}
		}
		return false
	}
	return true
}

// misspeltAs returns the field among present that is likely the required
// field misspelt: the one that suggest would correct to it.
func misspeltAs(required string, present []string) (string, bool) {
	for _, p := range present {
		if p == required {
			return "", false
		}
	}
	for _, p := range present {
		if sug, ok := suggest(p, []string{required}); ok && sug == required {
			return p, true
		}
	}
	return "", false
}
