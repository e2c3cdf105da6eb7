package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/wfhq/wf/schemas"
)

// schemaBaseURL is where the embedded schema files are registered, so that
// their relative $refs resolve to one another and to nothing else.
const schemaBaseURL = "wf:///schemas/"

// newSchemaCompiler returns a draft 2020-12 compiler that never loads a
// schema from outside: every $ref must resolve to a resource added to it.
func newSchemaCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%s cannot be loaded: a $ref must point inside the schema", s)
	}
	return c
}

// specSchema is pass 1: the spec schema of package schemas, compiled.
type specSchema struct {
	schema *jsonschema.Schema
	raw    rawSchemas
}

// newSpecSchema compiles the embedded spec schemas.
func newSpecSchema() (*specSchema, error) {
	c := newSchemaCompiler()
	raw := rawSchemas{}
	for _, name := range schemas.SpecSchemas() {
		data, err := schemas.Read(name)
		if err != nil {
			return nil, fmt.Errorf("error loading spec schemas: %w", err)
		}
		url := schemaBaseURL + name
		if err := c.AddResource(url, bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("error loading spec schema %s: %w", name, err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("error decoding spec schema %s: %w", name, err)
		}
		raw[url] = doc
	}
	s, err := c.Compile(schemaBaseURL + schemas.SpecSchema)
	if err != nil {
		return nil, fmt.Errorf("error compiling spec schemas: %w", err)
	}
	return &specSchema{schema: s, raw: raw}, nil
}

// check validates one document and positions every violation in its file.
func (s *specSchema) check(d *document) Errors {
	err := s.schema.Validate(d.value)
	if err == nil {
		return nil
	}
	var errs Errors
	for _, v := range violations(err, s.raw, d.value) {
		errs = append(errs, d.violationError(v, ""))
		d.flag(v.pointer(""))
	}
	return errs
}

// pointer returns the pointer of the value a violation is about, base being
// the pointer of the validated value.
func (v violation) pointer(base string) string {
	if v.kind == violationValue {
		return base + v.ptr
	}
	return joinPointer(base+v.ptr, v.field)
}

// violationError places a schema violation in the document. base is the
// pointer of the validated value inside the document ("" for the whole
// document); v.ptr is relative to it.
func (d *document) violationError(v violation, base string) Error {
	ptr := base + v.ptr
	path := fieldPath(d.value, ptr)
	switch v.kind {
	case violationMissing:
		return d.errorAt(d.at(ptr), "%smissing required field %q", prefixPath(path), v.field)
	case violationUnknown:
		child := joinPointer(ptr, v.field)
		where := ""
		if path != "" {
			where = " in " + path
		}
		return d.errorAt(d.keyAt(child), "unknown field %q%s%s", v.field, where, unknownFieldHint(v))
	default:
		return d.errorAt(d.at(ptr), "%s%s", prefixPath(path), v.message)
	}
}

// prefixPath returns "path: ", or "" for the document root.
func prefixPath(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

// compileError words an error from compiling a user's JSON Schema (a task
// type's inputs) as violations inside that schema.
func compileError(err error, raw rawSchemas, schemaDoc any) []violation {
	var se *jsonschema.SchemaError
	if errors.As(err, &se) {
		if _, isValidation := se.Err.(*jsonschema.ValidationError); isValidation {
			return violations(se.Err, raw, schemaDoc)
		}
		if se.Err != nil {
			err = se.Err
		}
	}
	msg := strings.TrimPrefix(err.Error(), "jsonschema: ")
	return []violation{{message: "not a valid JSON Schema: " + msg}}
}
