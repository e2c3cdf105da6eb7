package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// This file finds the comparisons a schema rules out: a value compared with
// a literal its enum does not allow, or that its minimum or maximum puts out
// of reach, is never true (or, for !=, always true).

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

// ruledOutComparisons finds, in a parsed expression, the comparisons of a
// chain of reads with literals its schema rules out: ==, != and in a list
// of literals against an enum, ==, !=, <, <=, > and >= against bounds, each
// maybe under a not.
type ruledOutComparisons struct {
	resolve schemaResolver
	found   []*comparison
	negated map[*ast.BinaryNode]bool
}

// Visit implements ast.Visitor. ast.Walk visits a node after its children,
// so a not is seen after the comparison it negates.
func (v *ruledOutComparisons) Visit(n *ast.Node) {
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
func (v *ruledOutComparisons) comparison(b *ast.BinaryNode) (*comparison, bool) {
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
func (v *ruledOutComparisons) neverTrue(n ast.Node) bool {
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

// checkComparisons reports each comparison in the expression at ptr of a
// value with literals that the value's schema rules out (by its enum, == is
// never true and != always; by its bounds, only the never true ones), at
// the literal. neverTrue says whether the whole expression, a condition,
// can therefore never be true.
func (c *checker) checkComparisons(d *document, ptr, source string, resolve schemaResolver) (neverTrue bool) {
	tree, err := parser.Parse(source)
	if err != nil {
		return false
	}
	v := &ruledOutComparisons{resolve: resolve, negated: map[*ast.BinaryNode]bool{}}
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
