package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// This file holds the checks of a task type's inputs schema that the JSON
// Schema compiler does not make, because the schema is valid JSON Schema,
// but that fail every enqueue at run time (or check nothing).

// closedProperties returns the properties a closed object schema
// (additionalProperties: false, no patternProperties) declares; closed is
// false for an open schema.
func closedProperties(schema any) (props []string, closed bool) {
	m, ok := schema.(map[string]any)
	if !ok {
		return nil, false
	}
	if open, isBool := m["additionalProperties"].(bool); !isBool || open || m["patternProperties"] != nil {
		return nil, false
	}
	p, _ := m["properties"].(map[string]any)
	return sortedKeys(p), true
}

// checkInputReads reports the inputs.X an expression at ptr reads when the
// closed inputs schema has no property X: every evaluation would fail.
func (c *checker) checkInputReads(d *document, ptr, source string, schema any) {
	props, closed := closedProperties(schema)
	if !closed {
		return
	}
	v := &inputReads{}
	if !walkSource(source, v) {
		return
	}
	for _, r := range v.reads {
		if slices.Contains(props, r.name) {
			continue
		}
		hint := "; the schema declares " + strings.Join(props, ", ")
		if len(props) == 0 {
			hint = "; the schema declares no property"
		}
		if s, ok := suggest(r.name, props); ok {
			hint = fmt.Sprintf("; did you mean inputs.%s?", s)
		}
		msg := fmt.Sprintf("reads inputs.%s, but the inputs schema allows no property %s (additionalProperties: false), so every task would fail here%s", r.name, r.name, hint)
		at := d.at(ptr)
		if exact, ok := d.exprPos(ptr, source, 1, r.offset); ok {
			at = exact
		}
		c.add(d, ptr, d.errorAt(at, "%s%s", prefixPath(fieldPath(d.value, ptr)), msg))
	}
}

// inputRead is one inputs.X (or inputs["X"]) in an expression.
type inputRead struct {
	name   string
	offset int // 0-based column of the property in the expression
}

// inputReads collects the input properties an expression reads.
type inputReads struct{ reads []inputRead }

// Visit implements ast.Visitor.
func (v *inputReads) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "inputs" {
		return
	}
	if prop, ok := m.Property.(*ast.StringNode); ok {
		v.reads = append(v.reads, inputRead{name: prop.Value, offset: prop.Location().From})
	}
}

// checkInputSchema checks a compiled inputs schema (doc, as JSON values) at
// /inputs of d: a closed schema's required properties must be declared, and
// every format must be one the validator knows.
func (c *checker) checkInputSchema(d *document, doc any) {
	walkSchemas(doc, "/inputs", func(ptr string, m map[string]any) {
		if props, closed := closedProperties(m); closed {
			if req, ok := m["required"].([]any); ok {
				for i, r := range req {
					name, isStr := r.(string)
					if !isStr || slices.Contains(props, name) {
						continue
					}
					hint := "declare it under properties or remove it from required"
					if s, ok := suggest(name, props); ok {
						hint = fmt.Sprintf("did you mean %q?", s)
					}
					c.fail(d, fmt.Sprintf("%s/required/%d", ptr, i), "requires %q, which properties does not declare and additionalProperties: false forbids, so no input can pass; %s", name, hint)
				}
			}
		}
		if f, ok := m["format"].(string); ok {
			if _, known := jsonschema.Formats[f]; !known {
				hint := "; known formats: " + strings.Join(knownFormats(), ", ")
				if s, ok := suggest(f, knownFormats()); ok {
					hint = fmt.Sprintf("; did you mean %q?", s)
				}
				c.fail(d, ptr+"/format", "unknown format %q would check nothing%s", f, hint)
			}
		}
	})
}

// knownFormats lists the formats the inputs validator checks, sorted.
func knownFormats() []string { return sortedKeys(jsonschema.Formats) }

// schemaKeywordsWithSchemas are the keywords whose value is a schema, a
// list of schemas or a map of schemas.
var schemaKeywordsWithSchemas = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
	"items": true, "prefixItems": true, "additionalProperties": true, "additionalItems": true, "contains": true,
	"not": true, "if": true, "then": true, "else": true, "allOf": true, "anyOf": true, "oneOf": true,
	"propertyNames": true, "unevaluatedItems": true, "unevaluatedProperties": true,
}

// walkSchemas calls fn for the schema at ptr and every schema inside it.
func walkSchemas(v any, ptr string, fn func(ptr string, m map[string]any)) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	fn(ptr, m)
	for _, kw := range sortedKeys(m) {
		if !schemaKeywordsWithSchemas[kw] {
			continue
		}
		child := joinPointer(ptr, kw)
		switch sub := m[kw].(type) {
		case []any:
			for i, s := range sub {
				walkSchemas(s, fmt.Sprintf("%s/%d", child, i), fn)
			}
		case map[string]any:
			switch kw {
			case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
				for _, name := range sortedKeys(sub) {
					walkSchemas(sub[name], joinPointer(child, name), fn)
				}
			default:
				walkSchemas(sub, child, fn)
			}
		}
	}
}

// badRef finds the $ref a schema compile error is about, when the error
// names its value, so that the error points at the $ref and not at the
// schema's root.
func (d *document) badRef(v violation) (ref, ptr string, ok bool) {
	if v.kind != violationValue || v.ptr != "" {
		return "", "", false
	}
	schema, found := d.lookup("/inputs")
	if !found {
		return "", "", false
	}
	walkSchemas(schema, "/inputs", func(p string, m map[string]any) {
		if r, isStr := m["$ref"].(string); isStr && !ok && r != "" && strings.Contains(v.message, r) {
			ref, ptr, ok = r, p+"/$ref", true
		}
	})
	return ref, ptr, ok
}

// checkFileInputs reports the names in a task type's files that its inputs
// schema does not declare as a property: the check at creation would look
// for an input no task can have.
func (c *checker) checkFileInputs(d *document, names []string, schema any) {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	declared := sortedKeys(props)
	for i, name := range names {
		if slices.Contains(declared, name) {
			continue
		}
		hint := "; the inputs schema declares no property"
		if len(declared) > 0 {
			hint = "; the inputs schema declares " + strings.Join(declared, ", ")
		}
		if s, ok := suggest(name, declared); ok {
			hint = fmt.Sprintf("; did you mean %s?", s)
		}
		c.fail(d, fmt.Sprintf("/files/%d", i), "names input %q, which the inputs schema does not declare as a property%s", name, hint)
	}
}
