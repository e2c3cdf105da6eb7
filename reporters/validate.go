package reporters

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/wfhq/wf/schemas"
)

// envelopeSchemaFile is the envelope's JSON Schema in package schemas.
const envelopeSchemaFile = schemas.EnvelopeSchema

// envelopeSchema is the compiled envelope schema, built once on first use.
// The schema is embedded, so a failure here is a bug in the schema file,
// reported by every ValidateEnvelope call (and by this package's tests).
var envelopeSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return schemas.Compile(envelopeSchemaFile, true)
})

// Problem is one way in which a value breaks the envelope schema.
type Problem struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value: "" for
	// the envelope itself, "/record/stats" for its record's stats.
	Pointer string
	// Message says what is wrong there, as the schema validator puts it.
	Message string
}

// String formats the problem as `at "/pointer": message`.
func (p Problem) String() string { return fmt.Sprintf("at %q: %s", p.Pointer, p.Message) }

// EnvelopeError is returned by ValidateEnvelope for a JSON value that does
// not follow schemas/envelope.schema.json; it lists every problem found.
type EnvelopeError struct {
	Problems []Problem
}

// Error lists the problems, sorted by pointer.
func (e *EnvelopeError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "invalid envelope: " + strings.Join(parts, "; ")
}

// ValidateEnvelope decodes one envelope from raw, which must hold exactly
// one JSON object that follows schemas/envelope.schema.json. A value that
// breaks the schema gives an *EnvelopeError naming the JSON pointer of every
// problem; raw that is not one JSON value gives a plain error.
func ValidateEnvelope(raw []byte) (Envelope, error) {
	var env Envelope
	schema, err := envelopeSchema()
	if err != nil {
		return env, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return env, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return env, errors.New("unexpected data after the envelope: want one JSON object per line")
	}
	if err := schema.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return env, fmt.Errorf("error validating an envelope: %w", err)
		}
		return env, &EnvelopeError{Problems: problems(ve)}
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		// The schema accepted it, so this is a mismatch between the schema
		// and the Go types.
		return env, fmt.Errorf("error decoding a valid envelope: %w", err)
	}
	return env, nil
}

// problems flattens a validation error into its leaves, sorted by pointer
// and without duplicates.
func problems(ve *jsonschema.ValidationError) []Problem {
	var out []Problem
	for _, e := range schemas.Leaves(ve) {
		out = append(out, Problem{Pointer: e.InstanceLocation, Message: e.Message})
	}
	slices.SortFunc(out, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.Pointer, b.Pointer), strings.Compare(a.Message, b.Message))
	})
	return slices.Compact(out)
}
