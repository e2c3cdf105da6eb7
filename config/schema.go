package config

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/wfhq/wf/internal/editdist"
	"github.com/wfhq/wf/schemas"
)

// SchemaFile is the name of the configuration schema in package schemas.
const SchemaFile = "config.schema.json"

// compiledSchema is the configuration schema, compiled once.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return schemas.Compile(SchemaFile, false)
})

// checkSchema validates the file against the configuration schema and
// places every violation at its line and column.
func (f *yamlFile) checkSchema() Errors {
	s, err := compiledSchema()
	if err != nil {
		return Errors{{Source: fileSource(f.path, nil), Message: err.Error()}}
	}
	err = s.Validate(f.value)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Errors{{Source: fileSource(f.path, nil), Message: err.Error()}}
	}
	var errs Errors
	for _, v := range schemas.Leaves(ve) {
		errs = append(errs, f.violation(v)...)
	}
	slices.SortFunc(errs, func(a, b Error) int {
		return cmp.Or(cmp.Compare(a.Source.Line, b.Source.Line), cmp.Compare(a.Source.Col, b.Source.Col),
			strings.Compare(a.Field, b.Field), strings.Compare(a.Message, b.Message))
	})
	return slices.Compact(errs)
}

var (
	quotedSingleRE = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'`)
	quotedDoubleRE = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	typeRE         = regexp.MustCompile(`^expected (.*), but got (\S+)$`)
	minimumRE      = regexp.MustCompile(`^must be >= (\S+) but found (\S+)$`)
	minLengthRE    = regexp.MustCompile(`^length must be >= (\d+)`)
)

// typeWords words a JSON Schema type for an operator editing YAML.
var typeWords = map[string]string{
	"object":  "a mapping",
	"array":   "a list",
	"string":  "a string",
	"integer": "a whole number",
	"number":  "a number",
	"boolean": "true or false",
	"null":    "null",
}

// patternWords words what a schema pattern expects, by the pattern's
// location in the schema.
var patternWords = map[string]string{
	"/$defs/duration/pattern":                      "a duration such as 30s, 5m or 1h30m",
	"/$defs/channel/pattern":                       "a PostgreSQL identifier (letters, digits and underscores, not starting with a digit, at most 63 characters)",
	"/$defs/token/properties/token_sha256/pattern": "64 hexadecimal digits (the SHA-256 of the token)",
}

// isSecretPointer reports whether the value at ptr must never be echoed.
func isSecretPointer(ptr string) bool {
	last := ptr[strings.LastIndex(ptr, "/")+1:]
	switch ptr {
	case "/database_url", "/database/session_url", "/database/read_url", "/catalog/database_url", "/elasticsearch/password", "/elasticsearch/api_key":
		return true
	}
	if strings.HasPrefix(ptr, "/warehouse/connections/") && last == "url" {
		return true
	}
	return strings.HasPrefix(ptr, "/tokens/") && strings.HasPrefix(last, "token")
}

// violation turns one schema violation into errors placed in the file.
func (f *yamlFile) violation(v *jsonschema.ValidationError) Errors {
	ptr := v.InstanceLocation
	at := f.values[ptr]
	if at == nil {
		at = f.root
	}
	src := fileSource(f.path, at)
	field := fieldPath(ptr)
	got := describe(f.node(ptr), isSecretPointer(ptr))
	withGot := func(msg string) string {
		if got == "" {
			return msg
		}
		return msg + ", got " + got
	}
	keyword := v.KeywordLocation[strings.LastIndex(v.KeywordLocation, "/")+1:]
	_, absKeyword, _ := strings.Cut(v.AbsoluteKeywordLocation, "#")

	switch keyword {
	case "additionalProperties":
		known := fieldNames(typeAt(ptr))
		var errs Errors
		for _, name := range f.unknownFields(ptr) {
			child := ptr + "/" + escapePointer(name)
			errs = append(errs, Error{
				Source:  fileSource(f.path, f.keys[child]),
				Field:   fieldPath(child),
				Message: unknownFieldMessage(name, known),
			})
		}
		return errs
	case "required":
		var errs Errors
		for _, m := range quotedSingleRE.FindAllStringSubmatch(v.Message, -1) {
			errs = append(errs, Error{Source: src, Field: fieldPath(ptr + "/" + escapePointer(m[1])), Message: "required field is missing"})
		}
		return errs
	case "type":
		expected := v.Message
		if m := typeRE.FindStringSubmatch(v.Message); m != nil {
			words := strings.Split(m[1], " or ")
			for i, w := range words {
				words[i] = cmp.Or(typeWords[w], w)
			}
			expected = strings.Join(words, " or ")
		}
		if l, ok := leafByKey(field); ok {
			expected = l.expected()
		}
		return Errors{{Source: src, Field: field, Message: withGot("expected " + expected)}}
	case "pattern":
		expected, ok := patternWords[absKeyword]
		if !ok {
			return Errors{{Source: src, Field: field, Message: withGot(v.Message)}}
		}
		return Errors{{Source: src, Field: field, Message: withGot("expected " + expected)}}
	case "enum":
		var values []string
		for _, m := range quotedDoubleRE.FindAllStringSubmatch(v.Message, -1) {
			values = append(values, m[1])
		}
		return Errors{{Source: src, Field: field, Message: withGot("expected one of " + strings.Join(values, ", "))}}
	case "minimum":
		if m := minimumRE.FindStringSubmatch(v.Message); m != nil {
			return Errors{{Source: src, Field: field, Message: fmt.Sprintf("must be at least %s, got %s", m[1], m[2])}}
		}
	case "minLength":
		if m := minLengthRE.FindStringSubmatch(v.Message); m != nil {
			if m[1] == "1" {
				return Errors{{Source: src, Field: field, Message: "must not be empty"}}
			}
			return Errors{{Source: src, Field: field, Message: fmt.Sprintf("must be at least %s characters long", m[1])}}
		}
	}
	return Errors{{Source: src, Field: field, Message: v.Message}}
}

// unknownFieldMessage says a field is unknown and suggests the nearest
// known one, or lists them all.
func unknownFieldMessage(name string, known []string) string {
	best, bestDist := "", len(name)/2+1
	for _, k := range known {
		if d := editdist.Levenshtein(name, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown field; did you mean %q?", best)
	}
	if len(known) == 0 {
		return "unknown field"
	}
	return "unknown field; expected one of " + strings.Join(known, ", ")
}
