package cql2

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/wfhq/wf/engine/store"
)

// tokKind is the kind of a CQL2 text token.
type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuoted // "a property"
	tString // 'a literal'
	tNumber
	tPunct // ( ) , = <> < <= > >=
)

// token is one token of a CQL2 text filter.
type token struct {
	kind tokKind
	text string
	num  float64
	pos  int
}

// lex splits a CQL2 text filter into tokens.
func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',' || c == '=':
			out = append(out, token{kind: tPunct, text: string(c), pos: i})
			i++
		case c == '<' || c == '>':
			j := i + 1
			if j < len(s) && (s[j] == '=' || (c == '<' && s[j] == '>')) {
				j++
			}
			out = append(out, token{kind: tPunct, text: s[i:j], pos: i})
			i = j
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("at %d: the quote opened here is not closed", i+1)
				}
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c { // doubled: one quote
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			kind := tString
			if c == '"' {
				kind = tQuoted
			}
			out = append(out, token{kind: kind, text: b.String(), pos: i})
			i = j + 1
		case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			f, err := strconv.ParseFloat(s[i:j], 64)
			if err != nil {
				return nil, fmt.Errorf("at %d: %q is not a number", i+1, s[i:j])
			}
			out = append(out, token{kind: tNumber, text: s[i:j], num: f, pos: i})
			i = j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '.' || s[j] == ':' || s[j] >= '0' && s[j] <= '9' || unicode.IsLetter(rune(s[j]))) {
				j++
			}
			out = append(out, token{kind: tIdent, text: s[i:j], pos: i})
			i = j
		default:
			return nil, fmt.Errorf("at %d: unexpected character %q", i+1, c)
		}
	}
	return append(out, token{kind: tEOF, pos: len(s)}), nil
}

// textParser is a recursive-descent parser of CQL2 text.
type textParser struct {
	toks  []token
	i     int
	depth int
}

// ParseText reads a CQL2 text filter.
func ParseText(s string) (store.FeatureExpr, error) {
	if len(s) > MaxLength {
		return nil, fmt.Errorf("the filter is longer than %d bytes", MaxLength)
	}
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &textParser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errorf(t, "unexpected %q after a complete expression", t.text)
	}
	return e, nil
}

func (p *textParser) peek() token { return p.toks[p.i] }
func (p *textParser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// keyword reports whether the next token is the keyword kw, and takes it.
func (p *textParser) keyword(kw string) bool {
	if t := p.peek(); t.kind == tIdent && upper(t.text) == kw {
		p.i++
		return true
	}
	return false
}

// punct takes the punctuation s or fails.
func (p *textParser) punct(s string) error {
	if t := p.next(); t.kind != tPunct || t.text != s {
		return p.errorf(t, "expected %q", s)
	}
	return nil
}

func (p *textParser) errorf(t token, format string, args ...any) error {
	what := t.text
	if t.kind == tEOF {
		what = "the end"
	}
	return fmt.Errorf("at %d (%s): %s", t.pos+1, what, fmt.Sprintf(format, args...))
}

func (p *textParser) or() (store.FeatureExpr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return nil, fmt.Errorf("the filter nests deeper than %d", MaxDepth)
	}
	args, err := p.joined("OR", p.and)
	if err != nil || len(args) == 1 {
		return first(args), err
	}
	return store.ExprOr{Args: args}, nil
}

func (p *textParser) and() (store.FeatureExpr, error) {
	args, err := p.joined("AND", p.not)
	if err != nil || len(args) == 1 {
		return first(args), err
	}
	return store.ExprAnd{Args: args}, nil
}

// joined reads one or more operands (operand) separated by the keyword
// (OR, AND).
func (p *textParser) joined(keyword string, operand func() (store.FeatureExpr, error)) ([]store.FeatureExpr, error) {
	var args []store.FeatureExpr
	for {
		e, err := operand()
		if err != nil {
			return nil, err
		}
		args = append(args, e)
		if !p.keyword(keyword) {
			return args, nil
		}
	}
}

// first is the first of args, nil when there is none.
func first(args []store.FeatureExpr) store.FeatureExpr {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}

func (p *textParser) not() (store.FeatureExpr, error) {
	if p.keyword("NOT") {
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > MaxDepth {
			return nil, fmt.Errorf("the filter nests deeper than %d", MaxDepth)
		}
		e, err := p.not()
		if err != nil {
			return nil, err
		}
		return store.ExprNot{Arg: e}, nil
	}
	return p.primary()
}

// primary reads a parenthesised expression, a boolean, a spatial function
// or a predicate on a property.
func (p *textParser) primary() (store.FeatureExpr, error) {
	t := p.peek()
	if t.kind == tPunct && t.text == "(" {
		p.next()
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		return e, p.punct(")")
	}
	if t.kind == tIdent {
		switch u := upper(t.text); {
		case u == "TRUE" || u == "FALSE":
			p.next()
			return store.ExprBool(u == "TRUE"), nil
		case strings.HasPrefix(u, "S_"):
			p.next()
			return p.spatialCall(u)
		}
	}
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	negate := p.keyword("NOT")
	var e store.FeatureExpr
	switch {
	case p.keyword("LIKE"):
		pat := p.next()
		if left.prop == "" || pat.kind != tString {
			return nil, p.errorf(pat, "LIKE compares a property with a 'pattern'")
		}
		e = store.ExprLike{Property: left.prop, Pattern: pat.text}
	case p.keyword("BETWEEN"):
		lo := p.next()
		if !p.keyword("AND") {
			return nil, p.errorf(p.peek(), "BETWEEN low AND high")
		}
		hi := p.next()
		if left.prop == "" || lo.kind != tNumber || hi.kind != tNumber {
			return nil, p.errorf(hi, "BETWEEN compares a property with two numbers")
		}
		e = store.ExprBetween{Property: left.prop, Low: lo.num, High: hi.num}
	case p.keyword("IN"):
		if left.prop == "" {
			return nil, p.errorf(p.peek(), "IN tests a property")
		}
		if err := p.punct("("); err != nil {
			return nil, err
		}
		var vals []any
		for {
			v, err := p.operand()
			if err != nil {
				return nil, err
			}
			if v.prop != "" {
				return nil, fmt.Errorf("IN lists literals, not the property %q", v.prop)
			}
			vals = append(vals, v.lit)
			if t := p.next(); t.kind == tPunct && t.text == ")" {
				break
			} else if t.kind != tPunct || t.text != "," {
				return nil, p.errorf(t, "expected ',' or ')' in an IN list")
			}
		}
		e = store.ExprIn{Property: left.prop, Values: vals}
	default:
		if negate {
			return nil, p.errorf(p.peek(), "NOT here must be followed by LIKE, BETWEEN or IN")
		}
		if p.keyword("IS") {
			isNot := p.keyword("NOT")
			if !p.keyword("NULL") || left.prop == "" {
				return nil, p.errorf(p.peek(), "expected property IS [NOT] NULL")
			}
			e = store.ExprIsNull{Property: left.prop}
			if isNot {
				e = store.ExprNot{Arg: e}
			}
			return e, nil
		}
		op := p.next()
		if _, ok := flipCompare[op.text]; op.kind != tPunct || !ok {
			return nil, p.errorf(op, "expected a comparison (=, <>, <, <=, >, >=), LIKE, BETWEEN, IN or IS NULL")
		}
		right, err := p.operand()
		if err != nil {
			return nil, err
		}
		switch {
		case left.prop != "" && right.prop == "":
			return store.ExprCompare{Property: left.prop, Op: op.text, Value: right.lit}, nil
		case left.prop == "" && right.prop != "":
			return store.ExprCompare{Property: right.prop, Op: flipCompare[op.text], Value: left.lit}, nil
		}
		return nil, p.errorf(op, "a comparison has one property and one literal")
	}
	if negate {
		e = store.ExprNot{Arg: e}
	}
	return e, nil
}

// operandValue is a property name or a literal (string, float64, bool).
type operandValue struct {
	prop string
	lit  any
}

// operand reads a property or a literal.
func (p *textParser) operand() (operandValue, error) {
	t := p.next()
	switch t.kind {
	case tString:
		return operandValue{lit: t.text}, nil
	case tNumber:
		return operandValue{lit: t.num}, nil
	case tQuoted:
		return operandValue{prop: t.text}, nil
	case tIdent:
		switch upper(t.text) {
		case "TRUE":
			return operandValue{lit: true}, nil
		case "FALSE":
			return operandValue{lit: false}, nil
		case "AND", "OR", "NOT", "LIKE", "BETWEEN", "IN", "IS", "NULL":
			return operandValue{}, p.errorf(t, "a keyword where a property or a value belongs")
		}
		return operandValue{prop: t.text}, nil
	}
	return operandValue{}, p.errorf(t, "expected a property or a value")
}

// spatialCall reads the arguments of spatial function op.
func (p *textParser) spatialCall(op string) (store.FeatureExpr, error) {
	if err := p.punct("("); err != nil {
		return nil, err
	}
	a, err := p.spatialArg()
	if err != nil {
		return nil, err
	}
	if err := p.punct(","); err != nil {
		return nil, err
	}
	b, err := p.spatialArg()
	if err != nil {
		return nil, err
	}
	if err := p.punct(")"); err != nil {
		return nil, err
	}
	return spatial(op, a, b)
}

// wktTypes maps WKT geometry keywords to GeoJSON types.
var wktTypes = map[string]string{
	"POINT": "Point", "LINESTRING": "LineString", "POLYGON": "Polygon", "MULTIPOINT": "MultiPoint",
	"MULTILINESTRING": "MultiLineString", "MULTIPOLYGON": "MultiPolygon", "GEOMETRYCOLLECTION": "GeometryCollection",
}

// spatialArg reads a geometry property, a WKT geometry or a BBOX.
func (p *textParser) spatialArg() (spatialArg, error) {
	t := p.peek()
	if t.kind == tQuoted {
		p.next()
		return spatialArg{prop: true}, nil
	}
	if t.kind != tIdent {
		return spatialArg{}, p.errorf(t, "expected the geometry property, a WKT geometry or BBOX(...)")
	}
	u := upper(t.text)
	if u == "BBOX" {
		p.next()
		if err := p.punct("("); err != nil {
			return spatialArg{}, err
		}
		var v []float64
		for {
			n := p.next()
			if n.kind != tNumber {
				return spatialArg{}, p.errorf(n, "BBOX holds numbers")
			}
			v = append(v, n.num)
			if c := p.next(); c.kind == tPunct && c.text == ")" {
				break
			} else if c.kind != tPunct || c.text != "," {
				return spatialArg{}, p.errorf(c, "expected ',' or ')' in BBOX")
			}
		}
		g, err := bboxPolygon(v)
		if err != nil {
			return spatialArg{}, p.errorf(t, "%s", err.Error())
		}
		return spatialArg{geom: g}, nil
	}
	if _, ok := wktTypes[u]; ok {
		g, err := p.wkt(0)
		if err != nil {
			return spatialArg{}, err
		}
		raw, err := json.Marshal(g)
		if err != nil {
			return spatialArg{}, fmt.Errorf("error encoding a geometry: %w", err)
		}
		return spatialArg{geom: raw}, nil
	}
	p.next()
	return spatialArg{prop: true}, nil
}

// wkt reads one WKT geometry as a GeoJSON object.
func (p *textParser) wkt(depth int) (map[string]any, error) {
	t := p.next()
	typ, ok := wktTypes[upper(t.text)]
	if t.kind != tIdent || !ok || depth > 8 {
		return nil, p.errorf(t, "expected a WKT geometry (POINT, LINESTRING, POLYGON, MULTI…, GEOMETRYCOLLECTION)")
	}
	if n := p.peek(); n.kind == tIdent && (upper(n.text) == "Z") {
		p.next()
	}
	if typ == "GeometryCollection" {
		if err := p.punct("("); err != nil {
			return nil, err
		}
		var geoms []any
		for {
			g, err := p.wkt(depth + 1)
			if err != nil {
				return nil, err
			}
			geoms = append(geoms, g)
			if c := p.next(); c.kind == tPunct && c.text == ")" {
				break
			} else if c.kind != tPunct || c.text != "," {
				return nil, p.errorf(c, "expected ',' or ')' in GEOMETRYCOLLECTION")
			}
		}
		return map[string]any{"type": typ, "geometries": geoms}, nil
	}
	coords, err := p.coords(0)
	if err != nil {
		return nil, err
	}
	// coords is a list (the outer parentheses); a POINT's is one position,
	// a MULTIPOINT's positions may each be parenthesised.
	list, _ := coords.([]any)
	var c any = list
	switch typ {
	case "Point":
		if len(list) != 1 {
			return nil, p.errorf(t, "a POINT has one position")
		}
		c = list[0]
	case "MultiPoint":
		for i, x := range list {
			if inner, ok := x.([]any); ok && len(inner) == 1 {
				list[i] = inner[0]
			}
		}
	}
	g := map[string]any{"type": typ, "coordinates": c}
	if err := checkGeoJSON(g, 0); err != nil {
		return nil, p.errorf(t, "%s", err.Error())
	}
	return g, nil
}

// coords reads "(" items ")" where an item is a position ("x y [z]") or
// another parenthesised list.
func (p *textParser) coords(depth int) (any, error) {
	if depth > 8 {
		return nil, fmt.Errorf("coordinates nest too deep")
	}
	if err := p.punct("("); err != nil {
		return nil, err
	}
	var out []any
	for {
		if t := p.peek(); t.kind == tPunct && t.text == "(" {
			inner, err := p.coords(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, inner)
		} else {
			var pos []float64
			for p.peek().kind == tNumber {
				pos = append(pos, p.next().num)
			}
			if len(pos) < 2 || len(pos) > 3 {
				return nil, p.errorf(p.peek(), "a position has 2 or 3 numbers")
			}
			ps := make([]any, len(pos))
			for i, v := range pos {
				ps[i] = v
			}
			out = append(out, ps)
		}
		c := p.next()
		if c.kind == tPunct && c.text == ")" {
			return out, nil
		}
		if c.kind != tPunct || c.text != "," {
			return nil, p.errorf(c, "expected ',' or ')' in coordinates")
		}
	}
}
