package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Feature filters: a tree of expressions over a feature's properties and
// geometry (what CQL2 compiles to, catalog/cql2) that the store turns into
// a WHERE clause of fixed SQL text with every value a bind parameter. No
// text of a filter ever reaches the statement: a property name, a pattern,
// a number or a geometry is a parameter, and the operators are chosen from
// the closed sets below.

// FeatureExpr is one node of a feature filter. The implementations are
// this package's Expr* types.
type FeatureExpr interface {
	// sql returns the expression's SQL, appending its values to args.
	sql(args *sqlArgs) (string, error)
}

// sqlArgs collects the bind parameters of a statement built in pieces.
type sqlArgs struct{ values []any }

// add appends v and returns its placeholder ("$3").
func (a *sqlArgs) add(v any) string {
	a.values = append(a.values, v)
	return "$" + strconv.Itoa(len(a.values))
}

// ExprAnd holds when all of Args hold (true when there are none).
type ExprAnd struct{ Args []FeatureExpr }

// ExprOr holds when one of Args holds (false when there are none).
type ExprOr struct{ Args []FeatureExpr }

// ExprNot holds when Arg does not.
type ExprNot struct{ Arg FeatureExpr }

// ExprCompare compares a property with a literal: Op is one of = <> < <= >
// >=, Value a string, a float64 or a bool. A property of another JSON type
// than Value's (or missing, or null) never matches, as CQL2 says of a
// comparison with an unknown value.
type ExprCompare struct {
	Property string
	Op       string
	Value    any
}

// ExprLike matches a string property against a CQL2 LIKE pattern: '%' any
// run of characters, '_' one character, '\' escapes the next one.
type ExprLike struct {
	Property string
	Pattern  string
}

// ExprBetween holds when a number property lies in [Low, High].
type ExprBetween struct {
	Property  string
	Low, High float64
}

// ExprIn holds when a property equals one of Values (strings, float64s or
// bools).
type ExprIn struct {
	Property string
	Values   []any
}

// ExprIsNull holds when a property is missing or JSON null.
type ExprIsNull struct{ Property string }

// ExprSpatial relates the feature's geometry to a literal geometry: Op is
// one of SpatialOps, Geometry a GeoJSON geometry in WGS84 longitude and
// latitude (CRS84).
type ExprSpatial struct {
	Op       string
	Geometry json.RawMessage
}

// ExprEnvelope holds when the feature's geometry intersects a rectangle
// [X0, Y0, X1, Y1] in the CRS SRID (an EPSG code; 4326 is read as
// longitude, latitude): a bbox parameter.
type ExprEnvelope struct {
	X0, Y0, X1, Y1 float64
	SRID           int
}

// ExprBool is a constant: TRUE or FALSE.
type ExprBool bool

// SpatialOps maps the CQL2 spatial operators to their PostGIS functions.
var SpatialOps = map[string]string{
	"S_INTERSECTS": "ST_Intersects", "S_DISJOINT": "ST_Disjoint", "S_EQUALS": "ST_Equals",
	"S_TOUCHES": "ST_Touches", "S_WITHIN": "ST_Within", "S_CONTAINS": "ST_Contains",
	"S_OVERLAPS": "ST_Overlaps", "S_CROSSES": "ST_Crosses",
}

// compareOps are the comparison operators a filter may use.
var compareOps = map[string]bool{"=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

// propertySQL is the jsonb value of a property: the name is a parameter.
func propertySQL(args *sqlArgs, name string) string {
	return "(properties -> " + args.add(name) + "::text)"
}

// jsonLiteral returns a literal's JSON text and its jsonb_typeof name.
func jsonLiteral(v any) (string, string, error) {
	var kind string
	switch v.(type) {
	case string:
		kind = "string"
	case float64:
		kind = "number"
	case bool:
		kind = "boolean"
	default:
		return "", "", fmt.Errorf("a filter value must be a string, a number or a boolean, got %T", v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", "", fmt.Errorf("error encoding the filter value %v: %w", v, err)
	}
	return string(b), kind, nil
}

func (e ExprAnd) sql(args *sqlArgs) (string, error) { return joinExprs(args, e.Args, " AND ", "TRUE") }
func (e ExprOr) sql(args *sqlArgs) (string, error)  { return joinExprs(args, e.Args, " OR ", "FALSE") }

// joinExprs joins the SQL of exprs with op; empty is the SQL of none.
func joinExprs(args *sqlArgs, exprs []FeatureExpr, op, empty string) (string, error) {
	if len(exprs) == 0 {
		return empty, nil
	}
	parts := make([]string, 0, len(exprs))
	for _, x := range exprs {
		s, err := x.sql(args)
		if err != nil {
			return "", err
		}
		parts = append(parts, s)
	}
	return "(" + strings.Join(parts, op) + ")", nil
}

func (e ExprNot) sql(args *sqlArgs) (string, error) {
	s, err := e.Arg.sql(args)
	if err != nil {
		return "", err
	}
	// A comparison with an unknown value is unknown, and so is its
	// negation: coalesce keeps such a feature out both ways.
	return "(NOT coalesce(" + s + ", TRUE))", nil
}

func (e ExprCompare) sql(args *sqlArgs) (string, error) {
	if !compareOps[e.Op] {
		return "", fmt.Errorf("unknown comparison operator %q", e.Op)
	}
	lit, kind, err := jsonLiteral(e.Value)
	if err != nil {
		return "", err
	}
	p := propertySQL(args, e.Property)
	return "(jsonb_typeof(" + p + ") = " + args.add(kind) + " AND " + p + " " + e.Op + " " + args.add(lit) + "::jsonb)", nil
}

func (e ExprLike) sql(args *sqlArgs) (string, error) {
	p := propertySQL(args, e.Property)
	return "(jsonb_typeof(" + p + ") = 'string' AND (" + p + " #>> '{}') LIKE " + args.add(e.Pattern) + "::text)", nil
}

func (e ExprBetween) sql(args *sqlArgs) (string, error) {
	p := propertySQL(args, e.Property)
	return "(jsonb_typeof(" + p + ") = 'number' AND (" + p + " #>> '{}')::numeric BETWEEN " +
		args.add(e.Low) + "::float8::numeric AND " + args.add(e.High) + "::float8::numeric)", nil
}

func (e ExprIn) sql(args *sqlArgs) (string, error) {
	lits := make([]string, 0, len(e.Values))
	for _, v := range e.Values {
		lit, _, err := jsonLiteral(v)
		if err != nil {
			return "", err
		}
		lits = append(lits, lit)
	}
	return "(" + propertySQL(args, e.Property) + " = ANY(" + args.add(lits) + "::jsonb[]))", nil
}

func (e ExprIsNull) sql(args *sqlArgs) (string, error) {
	p := propertySQL(args, e.Property)
	return "(" + p + " IS NULL OR " + p + " = 'null'::jsonb)", nil
}

func (e ExprSpatial) sql(args *sqlArgs) (string, error) {
	fn, ok := SpatialOps[e.Op]
	if !ok {
		return "", fmt.Errorf("unknown spatial operator %q", e.Op)
	}
	return fn + "(geom, ST_SetSRID(ST_GeomFromGeoJSON(" + args.add(string(e.Geometry)) + "::text), 4326))", nil
}

func (e ExprEnvelope) sql(args *sqlArgs) (string, error) {
	srid := e.SRID
	if srid == 0 {
		srid = 4326
	}
	env := "ST_MakeEnvelope(" + args.add(e.X0) + "::float8, " + args.add(e.Y0) + "::float8, " +
		args.add(e.X1) + "::float8, " + args.add(e.Y1) + "::float8, " + args.add(srid) + "::int)"
	if srid != 4326 {
		// A projected rectangle's edges are curves in degrees: densify
		// before reprojecting, so the outline keeps its shape.
		env = "ST_Transform(ST_Segmentize(" + env + ", greatest(" + args.add(e.X1-e.X0) + "::float8, " +
			args.add(e.Y1-e.Y0) + "::float8, 1e-9) / 64), 4326)"
	}
	return "ST_Intersects(geom, " + env + ")", nil
}

func (e ExprBool) sql(*sqlArgs) (string, error) {
	if e {
		return "TRUE", nil
	}
	return "FALSE", nil
}
