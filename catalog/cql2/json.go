package cql2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wfhq/wf/engine/store"
)

// ParseJSON reads a CQL2 JSON filter: {"op": …, "args": […]}, properties
// as {"property": name}, geometries as GeoJSON or {"bbox": […]}.
func ParseJSON(raw []byte) (store.FeatureExpr, error) {
	if len(raw) > MaxLength {
		return nil, fmt.Errorf("the filter is longer than %d bytes", MaxLength)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the filter is not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the filter holds more than one JSON value")
	}
	return jsonExpr(v, 0)
}

// jsonExpr reads one boolean expression.
func jsonExpr(v any, depth int) (store.FeatureExpr, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("the filter nests deeper than %d", MaxDepth)
	}
	if b, ok := v.(bool); ok {
		return store.ExprBool(b), nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("an expression is an object {\"op\": …, \"args\": […]}, got %s", describe(v))
	}
	op, _ := m["op"].(string)
	args, ok := m["args"].([]any)
	if op == "" || !ok {
		return nil, fmt.Errorf("an expression is an object {\"op\": …, \"args\": […]}")
	}
	for k := range m {
		if k != "op" && k != "args" {
			return nil, fmt.Errorf("an expression has op and args only, not %q", k)
		}
	}
	want := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("%q takes %d arguments, got %d", op, n, len(args))
		}
		return nil
	}
	switch lop := strings.ToLower(op); lop {
	case "and", "or":
		if len(args) < 2 {
			return nil, fmt.Errorf("%q takes 2 arguments or more", op)
		}
		var sub []store.FeatureExpr
		for _, a := range args {
			e, err := jsonExpr(a, depth+1)
			if err != nil {
				return nil, err
			}
			sub = append(sub, e)
		}
		if lop == "and" {
			return store.ExprAnd{Args: sub}, nil
		}
		return store.ExprOr{Args: sub}, nil
	case "not":
		if err := want(1); err != nil {
			return nil, err
		}
		e, err := jsonExpr(args[0], depth+1)
		if err != nil {
			return nil, err
		}
		return store.ExprNot{Arg: e}, nil
	case "=", "<>", "<", "<=", ">", ">=":
		if err := want(2); err != nil {
			return nil, err
		}
		a, aok := property(args[0])
		b, bok := property(args[1])
		switch {
		case aok && !bok:
			lit, err := literal(args[1])
			return store.ExprCompare{Property: a, Op: op, Value: lit}, err
		case bok && !aok:
			lit, err := literal(args[0])
			return store.ExprCompare{Property: b, Op: flipCompare[op], Value: lit}, err
		}
		return nil, fmt.Errorf("%q compares one property with one literal", op)
	case "like":
		if err := want(2); err != nil {
			return nil, err
		}
		p, ok := property(args[0])
		pat, sok := args[1].(string)
		if !ok || !sok {
			return nil, fmt.Errorf("\"like\" takes a property and a string pattern")
		}
		return store.ExprLike{Property: p, Pattern: pat}, nil
	case "between":
		if err := want(3); err != nil {
			return nil, err
		}
		p, ok := property(args[0])
		lo, lok := args[1].(float64)
		hi, hok := args[2].(float64)
		if !ok || !lok || !hok {
			return nil, fmt.Errorf("\"between\" takes a property and two numbers")
		}
		return store.ExprBetween{Property: p, Low: lo, High: hi}, nil
	case "in":
		if err := want(2); err != nil {
			return nil, err
		}
		p, ok := property(args[0])
		list, lok := args[1].([]any)
		if !ok || !lok || len(list) == 0 {
			return nil, fmt.Errorf("\"in\" takes a property and a non-empty array of literals")
		}
		vals := make([]any, 0, len(list))
		for _, x := range list {
			lit, err := literal(x)
			if err != nil {
				return nil, err
			}
			vals = append(vals, lit)
		}
		return store.ExprIn{Property: p, Values: vals}, nil
	case "isnull":
		if err := want(1); err != nil {
			return nil, err
		}
		p, ok := property(args[0])
		if !ok {
			return nil, fmt.Errorf("\"isNull\" takes a property")
		}
		return store.ExprIsNull{Property: p}, nil
	default:
		if !strings.HasPrefix(lop, "s_") {
			return nil, fmt.Errorf("unknown operator %q (this server has the basic CQL2 and spatial operators)", op)
		}
		if err := want(2); err != nil {
			return nil, err
		}
		a, err := jsonSpatialArg(args[0])
		if err != nil {
			return nil, err
		}
		b, err := jsonSpatialArg(args[1])
		if err != nil {
			return nil, err
		}
		return spatial(strings.ToUpper(op), a, b)
	}
}

// property returns the name of {"property": name}.
func property(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	name, ok := m["property"].(string)
	return name, ok && name != ""
}

// literal returns a string, number or boolean literal.
func literal(v any) (any, error) {
	switch v.(type) {
	case string, float64, bool:
		return v, nil
	}
	return nil, fmt.Errorf("a literal is a string, a number or a boolean, got %s", describe(v))
}

// jsonSpatialArg reads a geometry property, a GeoJSON geometry or a bbox.
func jsonSpatialArg(v any) (spatialArg, error) {
	if _, ok := property(v); ok {
		return spatialArg{prop: true}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return spatialArg{}, fmt.Errorf("a spatial argument is a property, a GeoJSON geometry or {\"bbox\": […]}, got %s", describe(v))
	}
	if bb, ok := m["bbox"].([]any); ok && len(m) == 1 {
		nums := make([]float64, 0, len(bb))
		for _, x := range bb {
			f, ok := x.(float64)
			if !ok {
				return spatialArg{}, fmt.Errorf("a bbox holds numbers")
			}
			nums = append(nums, f)
		}
		g, err := bboxPolygon(nums)
		return spatialArg{geom: g}, err
	}
	if err := checkGeoJSON(m, 0); err != nil {
		return spatialArg{}, err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return spatialArg{}, fmt.Errorf("error encoding a geometry: %w", err)
	}
	return spatialArg{geom: raw}, nil
}

// describe names a JSON value's type, for messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
