package spec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// InputError is one way task inputs break their task type's schema.
type InputError struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value ("" for
	// the inputs as a whole).
	Pointer string
	// Message says what was expected.
	Message string
}

// String formats the error as "pointer: message".
func (e InputError) String() string {
	p := e.Pointer
	if p == "" {
		p = "(root)"
	}
	return p + ": " + e.Message
}

// InputErrors lists every violation of a task type's inputs schema.
type InputErrors []InputError

// Error implements error.
func (es InputErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return "invalid inputs: " + strings.Join(parts, "; ")
}

// toJSONValue turns any value that encodes to JSON into the generic form the
// schema validator reads (numbers as json.Number): what encoding v and
// decoding the JSON with UseNumber gives. A value made of what
// json.Unmarshal decodes into an any (the client's inputs) is converted by
// a walk (genericJSON), a few times cheaper; anything else is encoded and
// decoded.
func toJSONValue(v any) (any, error) {
	if doc, ok := genericJSON(v); ok {
		return doc, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("error encoding inputs as JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("error decoding inputs: %w", err)
	}
	return out, nil
}

// genericJSON is v as encoding it with json.Marshal and decoding the JSON
// with UseNumber gives it, without the JSON: maps and slices copied, each
// float64 a json.Number in the text json.Marshal writes for it
// (jsonFloat). ok is false for a value the walk does not know to give the
// same for (another type, a float JSON cannot hold, a string that is not
// UTF-8, which json.Marshal would change): toJSONValue encodes those.
func genericJSON(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool:
		return v, true
	case string:
		return v, utf8.ValidString(v)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, false
		}
		return json.Number(jsonFloat(v)), true
	case map[string]any:
		if v == nil {
			return nil, true // null
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			d, ok := genericJSON(e)
			if !ok || !utf8.ValidString(k) {
				return nil, false
			}
			out[k] = d
		}
		return out, true
	case []any:
		if v == nil {
			return nil, true // null
		}
		out := make([]any, len(v))
		for i, e := range v {
			d, ok := genericJSON(e)
			if !ok {
				return nil, false
			}
			out[i] = d
		}
		return out, true
	}
	return nil, false
}

// jsonFloat writes f as json.Marshal does (encoding/json's floatEncoder for
// a float64): like %g, but with ES6's exponent cut-offs and an exponent
// not padded to two digits.
func jsonFloat(f float64) string {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(make([]byte, 0, 24), f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 → e-9
		b = b[:n-1]
	}
	return string(b)
}

// validateAgainst validates a generic JSON value and words the violations.
func validateAgainst(s *jsonschema.Schema, raw rawSchemas, doc any) error {
	err := s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("error validating inputs: %w", err)
	}
	var out InputErrors
	for _, v := range violations(err, raw, doc) {
		out = append(out, inputError(v))
	}
	slices.SortFunc(out, func(a, b InputError) int {
		return cmp.Or(strings.Compare(a.Pointer, b.Pointer), strings.Compare(a.Message, b.Message))
	})
	return slices.Compact(out)
}

// inputError words a violation for a client: every message has the pointer
// of the field it is about.
func inputError(v violation) InputError {
	switch v.kind {
	case violationMissing:
		return InputError{Pointer: displayPointer(joinPointer(v.ptr, v.field)), Message: "required field is missing"}
	case violationUnknown:
		return InputError{Pointer: displayPointer(joinPointer(v.ptr, v.field)), Message: "unknown field" + unknownFieldHint(v)}
	default:
		return InputError{Pointer: displayPointer(v.ptr), Message: v.message}
	}
}

// displayPointer turns an escaped pointer into a plain RFC 6901 one.
func displayPointer(ptr string) string {
	var b strings.Builder
	for _, tok := range splitPointer(ptr) {
		tok = strings.ReplaceAll(tok, "~", "~0")
		b.WriteString("/" + strings.ReplaceAll(tok, "/", "~1"))
	}
	return b.String()
}

// inputsSchemaURL is where a task type's inputs schema is registered.
func inputsSchemaURL(taskType string) string {
	return "wf:///task-types/" + pointerToken(taskType) + "/inputs.schema.json"
}

// compileInputSchema compiles a task type's inputs schema. It asserts
// formats (format: email is checked, not only noted) and loads nothing from
// outside.
func compileInputSchema(taskType string, raw json.RawMessage) (*jsonschema.Schema, rawSchemas, []violation) {
	url := inputsSchemaURL(taskType)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, []violation{{message: "not a valid JSON Schema: " + err.Error()}}
	}
	c := newSchemaCompiler()
	c.AssertFormat = true
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, nil, []violation{{message: "not a valid JSON Schema: " + err.Error()}}
	}
	s, err := compileSafely(c, url)
	if err != nil {
		vs := compileError(err, nil, doc)
		for i := range vs {
			// The registration URL is ours, not the author's: show the fragment only.
			vs[i].message = strings.ReplaceAll(vs[i].message, url, "")
		}
		return nil, nil, vs
	}
	return s, rawSchemas{url: doc}, nil
}

// compileSafely compiles url, turning a panic of the schema library on a
// malformed schema into an error: a spec file must never crash wf.
func compileSafely(c *jsonschema.Compiler, url string) (s *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("the schema compiler failed on this schema (%v)", r)
		}
	}()
	return c.Compile(url)
}
