package schemas

import (
	"bytes"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// NewCompiler returns a draft 2020-12 compiler that never loads a schema
// from outside: every $ref must resolve to a resource added to it.
func NewCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%s cannot be loaded: a $ref must point inside the schema", s)
	}
	return c
}

// Compile compiles the embedded schema file main, with the embedded files
// also loaded beside it for its $refs. With assertFormat, "format" is an
// assertion rather than an annotation.
func Compile(main string, assertFormat bool, also ...string) (*jsonschema.Schema, error) {
	c := NewCompiler()
	c.AssertFormat = assertFormat
	for _, name := range append([]string{main}, also...) {
		data, err := Read(name)
		if err != nil {
			return nil, err
		}
		if err := c.AddResource(ID(name), bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("error loading schema %s: %w", name, err)
		}
	}
	s, err := c.Compile(ID(main))
	if err != nil {
		return nil, fmt.Errorf("error compiling schema %s: %w", main, err)
	}
	return s, nil
}

// Leaves flattens a validation error into its innermost causes, the
// violations a person can act on.
func Leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, Leaves(c)...)
	}
	return out
}
