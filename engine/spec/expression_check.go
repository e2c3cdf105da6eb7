package spec

import (
	"encoding/json"
	"fmt"
	"math"
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
// wants, and a comparison with a value an enum does not allow is never (or
// always) true.

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

// enumValues lists the values a schema allows when it lists them (enum, or
// const), false otherwise.
func enumValues(schema any) ([]any, bool) {
	m, _ := schema.(map[string]any)
	if m == nil {
		return nil, false
	}
	if values, ok := m["enum"].([]any); ok && len(values) > 0 {
		return values, true
	}
	if v, ok := m["const"]; ok {
		return []any{v}, true
	}
	return nil, false
}

// literalValue is the value of a literal node as JSON would hold it; ok is
// false for a node that is not a literal.
func literalValue(n ast.Node) (any, bool) {
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value, true
	case *ast.IntegerNode:
		return float64(x.Value), true
	case *ast.FloatNode:
		return x.Value, true
	case *ast.BoolNode:
		return x.Value, true
	case *ast.NilNode:
		return nil, true
	}
	return nil, false
}

// sameJSONValue reports whether a literal (as literalValue gives it) equals
// a value of a schema (as decoded with UseNumber).
func sameJSONValue(lit, schemaValue any) bool {
	if n, ok := schemaValue.(json.Number); ok {
		f, err := n.Float64()
		l, isNum := lit.(float64)
		return err == nil && isNum && f == l
	}
	return lit == schemaValue
}

// comparison is a comparison of a chain of reads with literals that the
// chain's enum does not allow.
type comparison struct {
	node    *ast.BinaryNode
	chain   string // inputs.mode
	literal string // "quick", as written
	offset  int    // 0-based column of the literal in the expression
	op      string // the operator, as if the chain were on the left
	why     string // what the schema allows
	never   bool   // never true (==, in), else always true (!=, or under a not)
	ranged  bool   // ruled out by the schema's bounds, not its enum
}

// enumComparisons finds, in a parsed expression, the comparisons of a
// chain of reads with literals its schema's enum does not allow: ==, != and
// in a list of literals, each maybe under a not.
type enumComparisons struct {
	resolve schemaResolver
	found   []*comparison
	negated map[*ast.BinaryNode]bool
}

// Visit implements ast.Visitor. ast.Walk visits a node after its children,
// so a not is seen after the comparison it negates.
func (v *enumComparisons) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.UnaryNode:
		if b, ok := x.Node.(*ast.BinaryNode); ok && (x.Operator == "not" || x.Operator == "!") {
			v.negated[b] = !v.negated[b]
		}
	case *ast.BinaryNode:
		if c, ok := v.comparison(x); ok {
			v.found = append(v.found, c)
		}
	}
}

// comparison returns the comparison b is, when the schema of its chain
// rules out its literals: by its enum, or by its bounds (minimum, maximum).
func (v *enumComparisons) comparison(b *ast.BinaryNode) (*comparison, bool) {
	chainSide, litSide, op := b.Left, b.Right, b.Operator
	var lits []any
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		if _, isLit := literalValue(chainSide); isLit {
			chainSide, litSide, op = litSide, chainSide, flipped[op]
		}
		lit, isLit := literalValue(litSide)
		if !isLit || lit == nil {
			return nil, false
		}
		lits = []any{lit}
	case "in":
		list, isList := litSide.(*ast.ArrayNode)
		if !isList || len(list.Nodes) == 0 {
			return nil, false
		}
		for _, e := range list.Nodes {
			lit, isLit := literalValue(e)
			if !isLit || lit == nil {
				return nil, false
			}
			lits = append(lits, lit)
		}
	default:
		return nil, false
	}
	names, _, isChain := chainOf(chainSide)
	if !isChain {
		return nil, false
	}
	schema, found := v.resolve(names)
	if !found {
		return nil, false
	}
	chain := strings.Join(names, ".")
	c := &comparison{node: b, chain: chain, literal: litSide.String(), offset: litSide.Location().From, op: op, never: op != "!="}
	if allowed, listed := enumValues(schema); listed && (op == "==" || op == "!=" || op == "in") {
		for _, lit := range lits {
			if slices.ContainsFunc(allowed, func(a any) bool { return sameJSONValue(lit, a) }) {
				return nil, false
			}
		}
		texts := make([]string, len(allowed))
		for i, a := range allowed {
			texts[i] = jsonText(a)
		}
		c.why = fmt.Sprintf("its schema allows %s only %s (enum)", chain, strings.Join(texts, ", "))
		return c, true
	}
	f, isNum := lits[0].(float64)
	r, bounded := boundsOf(schema)
	if !isNum || !bounded || op == "in" || !r.rulesOut(op, f) {
		return nil, false
	}
	c.why = fmt.Sprintf("its schema allows %s only %s", chain, r)
	c.ranged = true
	return c, true
}

// flipped is the operator that compares the same with its operands swapped.
var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// bounds are the minimum and maximum a number schema allows.
type bounds struct {
	lo, hi                   float64
	hasLo, hasHi             bool
	loExclusive, hiExclusive bool
}

// boundsOf reads a schema's minimum, maximum, exclusiveMinimum and
// exclusiveMaximum (draft 2020-12: numbers); ok is false when it has none.
func boundsOf(schema any) (r bounds, ok bool) {
	m, _ := schema.(map[string]any)
	num := func(kw string) (float64, bool) {
		n, isNum := m[kw].(json.Number)
		if !isNum {
			return 0, false
		}
		f, err := n.Float64()
		return f, err == nil
	}
	if f, has := num("minimum"); has {
		r.lo, r.hasLo = f, true
	}
	if f, has := num("exclusiveMinimum"); has && (!r.hasLo || f >= r.lo) {
		r.lo, r.hasLo, r.loExclusive = f, true, true
	}
	if f, has := num("maximum"); has {
		r.hi, r.hasHi = f, true
	}
	if f, has := num("exclusiveMaximum"); has && (!r.hasHi || f <= r.hi) {
		r.hi, r.hasHi, r.hiExclusive = f, true, true
	}
	if typ, _ := m["type"].(string); typ == "integer" { // the bounds an integer can reach
		if r.hasLo {
			if r.loExclusive {
				r.lo = math.Floor(r.lo) + 1
			} else {
				r.lo = math.Ceil(r.lo)
			}
			r.loExclusive = false
		}
		if r.hasHi {
			if r.hiExclusive {
				r.hi = math.Ceil(r.hi) - 1
			} else {
				r.hi = math.Floor(r.hi)
			}
			r.hiExclusive = false
		}
	}
	return r, r.hasLo || r.hasHi
}

// rulesOut reports whether, for every number the bounds allow, x op f is
// never true (or, for !=, always true).
func (r bounds) rulesOut(op string, f float64) bool {
	below := r.hasLo && (f < r.lo || (r.loExclusive && f == r.lo))
	above := r.hasHi && (f > r.hi || (r.hiExclusive && f == r.hi))
	switch op {
	case "==", "!=":
		return below || above
	case ">":
		return r.hasHi && r.hi <= f
	case ">=":
		return r.hasHi && (r.hi < f || (r.hiExclusive && r.hi == f))
	case "<":
		return r.hasLo && r.lo >= f
	case "<=":
		return r.hasLo && (r.lo > f || (r.loExclusive && r.lo == f))
	}
	return false
}

// String says what the bounds allow: "at least 0 and at most 22".
func (r bounds) String() string {
	var parts []string
	if r.hasLo {
		word := "at least "
		if r.loExclusive {
			word = "above "
		}
		parts = append(parts, word+strconv.FormatFloat(r.lo, 'f', -1, 64))
	}
	if r.hasHi {
		word := "at most "
		if r.hiExclusive {
			word = "below "
		}
		parts = append(parts, word+strconv.FormatFloat(r.hi, 'f', -1, 64))
	}
	return strings.Join(parts, " and ")
}

// neverTrue reports whether a condition can never be true because of the
// comparisons found: one that is never true at its top, or in a chain of &&.
func (v *enumComparisons) neverTrue(n ast.Node) bool {
	b, ok := n.(*ast.BinaryNode)
	if !ok {
		return false
	}
	for _, c := range v.found {
		if c.node == b {
			return c.never
		}
	}
	if b.Operator == "&&" || b.Operator == "and" {
		return v.neverTrue(b.Left) || v.neverTrue(b.Right)
	}
	return false
}

// checkEnumComparisons reports each comparison in the expression at ptr of
// a value with literals that the value's enum does not allow (== is never
// true, != always), at the literal. neverTrue says whether the whole
// expression, a condition, can therefore never be true.
func (c *checker) checkEnumComparisons(d *document, ptr, source string, resolve schemaResolver) (neverTrue bool) {
	tree, err := parser.Parse(source)
	if err != nil {
		return false
	}
	v := &enumComparisons{resolve: resolve, negated: map[*ast.BinaryNode]bool{}}
	ast.Walk(&tree.Node, v)
	for _, cmp := range v.found {
		if v.negated[cmp.node] {
			cmp.never = !cmp.never
		}
		if cmp.ranged && !cmp.never {
			continue // a guard that always holds (not (zoom > 30)) is no mistake
		}
		outcome := "never true"
		if !cmp.never {
			outcome = "always true"
		}
		text := fmt.Sprintf("%s %s %s", cmp.chain, cmp.op, cmp.literal)
		if v.negated[cmp.node] {
			text = "not (" + text + ")"
		}
		at := d.at(ptr)
		if exact, ok := d.exprPos(ptr, source, 1, cmp.offset); ok {
			at = exact
		}
		c.add(d, ptr, d.errorAt(at, "%s%s is %s: %s", prefixPath(fieldPath(d.value, ptr)), text, outcome, cmp.why))
	}
	return v.neverTrue(tree.Node)
}

// inputType is the type a task type's inputs schema wants for input name;
// nil when the schema does not say.
func inputType(t *TaskType, name string) (reflect.Type, any) {
	schema, ok := schemaAt(t.inputsDoc[inputsSchemaURL(t.name)], []string{name})
	if !ok {
		return nil, nil
	}
	return schemaType(schema, 0), schema
}

// checkInputType reports an expression (at ptr) that feeds input name of
// task type t a value of another type than t's inputs schema wants: every
// task would be refused when it is created. got is the expression's type.
func (c *checker) checkInputType(d *document, ptr, source string, got reflect.Type, t *TaskType, name string) {
	want, _ := inputType(t, name)
	if want == nil || !typeMismatch(got, want, 0) {
		return
	}
	hint := ""
	if want.Kind() == reflect.String && isNumberLiteral(source) {
		hint = fmt.Sprintf("; for the text %s write it as a quoted literal inside the YAML value: '\"%s\"'", strings.TrimSpace(source), strings.TrimSpace(source))
	}
	c.fail(d, ptr, "input %s of task type %s must be %s (its inputs schema), but %s gives %s, so no task could be created%s",
		name, t.name, describeType(want), strings.TrimSpace(source), describeType(got), hint)
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
	tree, err := parser.Parse(source)
	if err != nil {
		return nil
	}
	v := &readChains{}
	ast.Walk(&tree.Node, v)
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

// checkTypedDedupKey type-checks a task type's dedup_key against its inputs
// schema (operands that cannot combine, comparisons an enum rules out),
// once it compiled against the untyped environment it runs in.
func (c *checker) checkTypedDedupKey(d *document, source string, schema any) {
	_, err := d.compileExpression("/dedup_key", source, typedTaskEnv(schema, source), resultString)
	if err != nil && !strings.Contains(err.Message, "has no field") {
		if strings.Contains(err.Message, "mismatched types") {
			err.Message += " (the inputs schema types the operands; convert one, e.g. string(inputs.x))"
		}
		c.failAt(d, "/dedup_key", err)
		return
	}
	c.checkEnumComparisons(d, "/dedup_key", source, func(names []string) (any, bool) {
		if len(names) == 0 || names[0] != "inputs" {
			return nil, false
		}
		return schemaAt(schema, names[1:])
	})
}
