package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	"github.com/wfhq/wf/schemas"
)

// schemaBaseURL is where the embedded schema files are registered, so that
// their relative $refs resolve to one another and to nothing else.
const schemaBaseURL = schemas.BaseID

// newSchemaCompiler returns a draft 2020-12 compiler that never loads a
// schema from outside (schemas.NewCompiler).
func newSchemaCompiler() *jsonschema.Compiler { return schemas.NewCompiler() }

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
	vs := violations(err, s.raw, d.value)
	// A field written at the top level that belongs inside an object the
	// document lacks: say where it goes, and not also that the object is
	// missing.
	placed := map[string]bool{}
	for i, v := range vs {
		if parent, ok := misplacedFields[d.kind][v.field]; ok && v.kind == violationUnknown && v.ptr == "" {
			vs[i].message = fmt.Sprintf("; it belongs under %s: indent it below that field", parent)
			placed[strings.SplitN(parent, ".", 2)[0]] = true
		}
	}
	vs, dropped := pairMisspelt(vs)
	for _, v := range dropped {
		d.flag(v.pointer(""))
	}
	var errs Errors
	for _, v := range vs {
		if v.kind == violationMissing && v.ptr == "" && placed[v.field] {
			d.flag(v.pointer(""))
			continue
		}
		errs = append(errs, d.violationError(v, ""))
		d.flag(v.pointer(""))
	}
	return errs
}

// misplacedFields maps, per kind, a field written at the top level of a
// document to the object it belongs in: runner settings written beside type,
// a handler or backoff field written beside name.
var misplacedFields = map[string]map[string]string{
	KindRunner: {"project": "settings", "region": "settings", "jobs": "settings"},
	KindTaskType: {
		"builtin": "handler", "exec": "handler", "http": "handler",
		"command": "handler.exec", "env": "handler.exec", "url": "handler.http", "headers": "handler.http",
		"base": "backoff", "factor": "backoff", "max": "backoff", "jitter": "backoff",
		"per_instance": "concurrency", "global": "concurrency",
		"create": "api",
	},
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
		if obj, ok := d.lookup(ptr); ok {
			if m, isMap := obj.(map[string]any); isMap {
				if typo, found := misspeltAs(v.field, sortedKeys(m)); found {
					return d.errorAt(d.keyAt(joinPointer(ptr, typo)), "%smissing required field %q; did you misspell it as %q?", prefixPath(path), v.field, typo)
				}
			}
		}
		return d.errorAt(d.at(ptr), "%smissing required field %q", prefixPath(path), v.field)
	case violationUnknown:
		child := joinPointer(ptr, v.field)
		where := ""
		if path != "" {
			where = " in " + path
		}
		hint := unknownFieldHint(v)
		if v.message != "" { // a misplaced field: where it belongs
			hint = v.message
		}
		return d.errorAt(d.keyAt(child), "unknown field %q%s%s", v.field, where, hint)
	default:
		return d.errorAt(d.at(ptr), "%s%s%s", prefixPath(path), v.message, d.yamlTypeHint(ptr, v.message))
	}
}

// yamlTypeHint explains a type mismatch that comes from how YAML typed an
// unquoted value: 0755 or 1e3 is a number, true a boolean, ~ or an empty
// value null, while yes, no and on stay text (YAML 1.2).
func (d *document) yamlTypeHint(ptr, message string) string {
	n, ok := d.nodes[ptr]
	if !ok || n.Kind != yaml.ScalarNode || n.Style != 0 || !strings.HasPrefix(message, "expected ") {
		return ""
	}
	wantsText := strings.HasPrefix(message, "expected string")
	switch tag := n.ShortTag(); {
	case wantsText && (tag == "!!int" || tag == "!!float" || tag == "!!bool") && d.isExpression(ptr):
		what := map[string]string{"!!int": "a number", "!!float": "a number", "!!bool": "a boolean"}[tag]
		return fmt.Sprintf("; YAML reads %s as %s, but the field is an expression: quote it, %s for the %s or '\"%s\"' for the text",
			n.Value, what, quoteSuggestion(n.Value), strings.TrimPrefix(what, "a "), n.Value)
	case wantsText && (tag == "!!int" || tag == "!!float" || tag == "!!bool"):
		what := map[string]string{"!!int": "a number", "!!float": "a number", "!!bool": "a boolean"}[tag]
		return fmt.Sprintf("; YAML reads %s as %s: quote it to keep it as text: %s", n.Value, what, quoteSuggestion(n.Value))
	case wantsText && tag == "!!null":
		return "; the value is empty (null): write it, or quote an empty text: \"\""
	case strings.HasPrefix(message, "expected boolean") && tag == "!!str":
		switch strings.ToLower(n.Value) {
		case "yes", "y", "on":
			return fmt.Sprintf("; YAML 1.2 reads %s as text, not a boolean: write true", n.Value)
		case "no", "n", "off":
			return fmt.Sprintf("; YAML 1.2 reads %s as text, not a boolean: write false", n.Value)
		}
	}
	return ""
}

// expressionFieldRE matches, per kind, the pointers of the fields whose
// value is an expression.
var expressionFieldRE = map[string]*regexp.Regexp{
	KindTaskType:     regexp.MustCompile(`^/dedup_key$`),
	KindSubscription: regexp.MustCompile(`^/(when|schema_name|dedup_key|inputs/[^/]+)$`),
	KindWorkflow:     regexp.MustCompile(`^/steps/[^/]+/(when|for_each|inputs/[^/]+)$`),
}

// isExpression reports whether the value at ptr is an expression, where a
// literal is written quoted in YAML and, for text, quoted again inside.
func (d *document) isExpression(ptr string) bool {
	re, ok := expressionFieldRE[d.kind]
	return ok && re.MatchString(ptr)
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
