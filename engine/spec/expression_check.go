package spec

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// This file holds the checks that read an expression against the JSON
// Schemas of the values it sees, beyond what expr's type checker proves: a
// value fed to a task type's input must be of the type that input's schema
// wants, and a dedup_key is typed by its task type's inputs schema. The
// comparisons a schema rules out are in expression_compare.go.

// chainOf returns the names of a chain of property reads (inputs.a.b,
// item.path, inputs["a"]), from its variable on, with the 0-based column of
// each name; ok is false for anything else (a call, an index, a literal).
func chainOf(n ast.Node) (names []string, offsets []int, ok bool) {
	for {
		switch x := n.(type) {
		case *ast.ChainNode:
			n = x.Node
		case *ast.MemberNode:
			prop, isStr := x.Property.(*ast.StringNode)
			if !isStr {
				return nil, nil, false
			}
			names = append([]string{prop.Value}, names...)
			offsets = append([]int{prop.Location().From}, offsets...)
			n = x.Node
		case *ast.IdentifierNode:
			names = append([]string{x.Value}, names...)
			offsets = append([]int{x.Location().From}, offsets...)
			return names, offsets, true
		default:
			return nil, nil, false
		}
	}
}

// schemaAt walks names down the properties of schema; ok is false when a
// name is not a declared property.
func schemaAt(schema any, names []string) (any, bool) {
	for _, name := range names {
		m, isMap := schema.(map[string]any)
		if !isMap {
			return nil, false
		}
		props, _ := m["properties"].(map[string]any)
		sub, declared := props[name]
		if !declared {
			return nil, false
		}
		schema = sub
	}
	return schema, true
}

// itemsSchema is the schema of the items of a list schema, nil when the
// schema is not a list or says nothing of its items.
func itemsSchema(schema any) any {
	m, _ := schema.(map[string]any)
	if typ, _ := m["type"].(string); typ != "array" {
		return nil
	}
	return m["items"]
}

// schemaResolver returns the schema of the value a chain of reads names
// (inputs.mode, steps.a.outputs.kind), false when no schema says.
type schemaResolver func(names []string) (schema any, ok bool)

// inputType is the type a task type's inputs schema wants for input name;
// nil when the schema does not say.
func inputType(t *TaskType, name string) reflect.Type {
	schema, ok := schemaAt(t.inputsDoc[inputsSchemaURL(t.name)], []string{name})
	if !ok {
		return nil
	}
	return schemaType(schema, 0)
}

// checkInputLiteral reports a literal (at ptr) fed to input name of task
// type t that the input's enum, minimum or maximum does not allow: every
// task would be refused when it is created.
func (c *checker) checkInputLiteral(d *document, ptr, source string, t *TaskType, name string) {
	schema, ok := schemaAt(t.inputsDoc[inputsSchemaURL(t.name)], []string{name})
	if !ok {
		return
	}
	tree, err := parser.Parse(source)
	if err != nil {
		return
	}
	lit, isLit := literalValue(tree.Node)
	if !isLit || lit == nil {
		return
	}
	text := strings.Join(strings.Fields(source), " ")
	if allowed, listed := enumValues(schema); listed {
		if slices.ContainsFunc(allowed, func(a any) bool { return sameJSONValue(lit, a) }) {
			return
		}
		texts := make([]string, len(allowed))
		for i, a := range allowed {
			texts[i] = jsonText(a)
		}
		c.fail(d, ptr, "input %s of %s must be one of %s (its inputs schema), but %s is not, so no %s could be created",
			name, t.whatBare(), strings.Join(texts, ", "), text, t.creates())
		return
	}
	if f, isNum := lit.(float64); isNum {
		if r, bounded := boundsOf(schema); bounded && r.rulesOut("==", f) {
			c.fail(d, ptr, "input %s of %s must be %s (its inputs schema), but %s is not, so no %s could be created",
				name, t.whatBare(), r, text, t.creates())
		}
	}
}

// checkInputType reports an expression (at ptr) that feeds input name of
// task type t a value of another type than t's inputs schema wants: every
// task would be refused when it is created. got is the expression's type.
func (c *checker) checkInputType(d *document, ptr, source string, got reflect.Type, t *TaskType, name string) {
	want := inputType(t, name)
	if want == nil || !typeMismatch(got, want, 0) {
		return
	}
	text := strings.Join(strings.Fields(source), " ") // on one line
	hint := ""
	if want.Kind() == reflect.String && isNumberLiteral(source) {
		hint = fmt.Sprintf("; for the text %s write it as a quoted literal inside the YAML value: '\"%s\"'", text, text)
	}
	c.fail(d, ptr, "input %s of %s must be %s (its inputs schema), but %s gives %s, so no %s could be created%s",
		name, t.whatBare(), describeType(want), text, describeType(got), t.creates(), hint)
}

// isNumberLiteral reports whether source is a number written as a literal.
func isNumberLiteral(source string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(source), 64)
	return err == nil
}

// typeMismatch reports whether a value of type got can never be valid where
// a value of type want is expected, as JSON: a string is not a number, a
// list of strings not a list of numbers. Unknown types (any) match
// everything; an integer is a number, and a number may be whole.
func typeMismatch(got, want reflect.Type, depth int) bool {
	if got == nil || want == nil || depth > maxSchemaTypeDepth {
		return false
	}
	gk, wk := jsonKindOf(got), jsonKindOf(want)
	if gk == "" || wk == "" {
		return false
	}
	if gk != wk {
		return true
	}
	switch gk {
	case "list":
		return typeMismatch(got.Elem(), want.Elem(), depth+1)
	case "object":
		if got.Kind() != reflect.Struct || want.Kind() != reflect.Struct {
			return false
		}
		for i := range want.NumField() {
			wf := want.Field(i)
			for j := range got.NumField() {
				gf := got.Field(j)
				if gf.Tag.Get("expr") == wf.Tag.Get("expr") && typeMismatch(gf.Type, wf.Type, depth+1) {
					return true
				}
			}
		}
	}
	return false
}

// jsonKindOf names the JSON kind of values of t, "" when unknown.
func jsonKindOf(t reflect.Type) string {
	if t == reflect.TypeFor[time.Time]() {
		return "string" // RFC 3339 in JSON
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return ""
}

// describeType names a type in the words of JSON: a string, an integer, a
// list of strings.
func describeType(t reflect.Type) string {
	if t == reflect.TypeFor[time.Time]() {
		return "a time"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if e := t.Elem(); e.Kind() == reflect.Slice || e.Kind() == reflect.Array {
			return "a list of lists"
		} else if e.Kind() != reflect.Interface {
			return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(e), "a "), "an ") + "s"
		}
		return "a list"
	}
	return kindName(t)
}

// readNames collects, for an expression, the names each chain of reads
// takes at each level: inputs.a.b and inputs.c give {inputs: {a: {b}, c}}.
type readNames map[string]readNames

// readNamesOf parses source and collects its chains of reads.
func readNamesOf(source string) readNames {
	v := &readChains{}
	if !walkSource(source, v) {
		return nil
	}
	out := readNames{}
	for _, r := range v.reads {
		level := out
		for _, name := range r.names {
			if level[name] == nil {
				level[name] = readNames{}
			}
			level = level[name]
		}
	}
	return out
}

// inputsTypeFor is the type of inputs in an expression that reads it as
// reads says, under an inputs schema that may leave objects open: the
// declared properties typed by the schema, and the properties read but
// not declared typed any (whether a closed schema allows them is
// checkInputReads's business).
func inputsTypeFor(schema any, reads readNames, depth int) reflect.Type {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	if m == nil || depth > maxSchemaTypeDepth || len(props) == 0 {
		if t := schemaType(schema, depth); t.Kind() != reflect.Struct {
			return t
		}
		return reflect.TypeFor[map[string]any]()
	}
	if typ, _ := m["type"].(string); typ != "" && typ != "object" {
		return schemaType(schema, depth)
	}
	var fields []field
	for _, name := range sortedKeys(props) {
		fields = append(fields, field{name: name, typ: inputsTypeFor(props[name], reads[name], depth+1)})
	}
	for _, name := range sortedKeys(reads) {
		if _, declared := props[name]; !declared {
			fields = append(fields, field{name: name, typ: anyType})
		}
	}
	return structType(fields)
}

// typedTaskEnv is the environment a task type's dedup_key is type-checked
// against: taskEnv, with inputs typed by the inputs schema.
func typedTaskEnv(schema any, source string) any {
	inputs := inputsTypeFor(schema, readNamesOf(source)["inputs"], 0)
	return reflect.New(structType([]field{
		{name: "inputs", typ: inputs},
		{name: "schema_name", typ: reflect.TypeFor[string]()},
		{name: "task_type", typ: reflect.TypeFor[string]()},
	})).Elem().Interface()
}

// resultType is the type the checker gave a program's result, nil when
// unknown.
func (p *program) resultType() reflect.Type {
	if p == nil || p.prog == nil || p.prog.Node() == nil {
		return nil
	}
	return p.prog.Node().Type()
}

// typingArtefact reports whether an error of a typed check comes from typing
// an object as a struct, which the value is not at run time (a map): len,
// keys or a computed index of it, or a property the schema does not
// declare (checkInputReads's business). Such an error is not the author's.
func typingArtefact(msg string) bool { return strings.Contains(msg, "struct {") }

// checkTypedDedupKey type-checks a task type's dedup_key against its inputs
// schema (operands that cannot combine, comparisons an enum rules out),
// once it compiled against the untyped environment it runs in.
func (c *checker) checkTypedDedupKey(d *document, source string, schema any) {
	_, err := d.compileExpression("/dedup_key", source, typedTaskEnv(schema, source), resultString)
	if err != nil && !typingArtefact(err.Message) {
		if strings.Contains(err.Message, "mismatched types") {
			err.Message += " (the inputs schema types the operands; convert one, e.g. string(inputs.x))"
		}
		c.failAt(d, "/dedup_key", err)
		return
	}
	c.checkComparisons(d, "/dedup_key", source, func(names []string) (any, bool) {
		if len(names) == 0 || names[0] != "inputs" {
			return nil, false
		}
		return schemaAt(schema, names[1:])
	})
}

// walkSource walks the expression source with v; false, without a walk,
// when source does not parse (its compile reports that).
func walkSource(source string, v ast.Visitor) bool {
	tree, err := parser.Parse(source)
	if err != nil {
		return false
	}
	ast.Walk(&tree.Node, v)
	return true
}
