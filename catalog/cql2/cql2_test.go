package cql2_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/cql2"
	"github.com/wfhq/wf/engine/store"
)

// TestParseText reads CQL2 text into the store's expressions: precedence
// (NOT, AND, OR), literals on either side, and the spatial literals.
func TestParseText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want store.FeatureExpr
	}{
		{`pop > 5`, store.ExprCompare{Property: "pop", Op: ">", Value: 5.0}},
		{`5 < pop`, store.ExprCompare{Property: "pop", Op: ">", Value: 5.0}},
		{`"the name" = 'it''s'`, store.ExprCompare{Property: "the name", Op: "=", Value: "it's"}},
		{`a = 1 OR b = 2 AND NOT c = TRUE`, store.ExprOr{Args: []store.FeatureExpr{
			store.ExprCompare{Property: "a", Op: "=", Value: 1.0},
			store.ExprAnd{Args: []store.FeatureExpr{
				store.ExprCompare{Property: "b", Op: "=", Value: 2.0},
				store.ExprNot{Arg: store.ExprCompare{Property: "c", Op: "=", Value: true}},
			}},
		}}},
		{`(a = 1 OR b = 2) and c <> 'x'`, store.ExprAnd{Args: []store.FeatureExpr{
			store.ExprOr{Args: []store.FeatureExpr{store.ExprCompare{Property: "a", Op: "=", Value: 1.0}, store.ExprCompare{Property: "b", Op: "=", Value: 2.0}}},
			store.ExprCompare{Property: "c", Op: "<>", Value: "x"},
		}}},
		{`name NOT LIKE 'A%'`, store.ExprNot{Arg: store.ExprLike{Property: "name", Pattern: "A%"}}},
		{`pop BETWEEN -1.5 AND 2e3`, store.ExprBetween{Property: "pop", Low: -1.5, High: 2000}},
		{`kind IN ('a', 'b', 3)`, store.ExprIn{Property: "kind", Values: []any{"a", "b", 3.0}}},
		{`x IS NOT NULL`, store.ExprNot{Arg: store.ExprIsNull{Property: "x"}}},
		{`TRUE`, store.ExprBool(true)},
		{`S_INTERSECTS(geometry, POINT(1 2))`, store.ExprSpatial{Op: "S_INTERSECTS", Geometry: json.RawMessage(`{"coordinates":[1,2],"type":"Point"}`)}},
		{`s_within(POINT(1 2), geometry)`, store.ExprSpatial{Op: "S_CONTAINS", Geometry: json.RawMessage(`{"coordinates":[1,2],"type":"Point"}`)}},
		{`S_WITHIN(geometry, BBOX(0, 1, 2, 3))`, store.ExprSpatial{Op: "S_WITHIN", Geometry: json.RawMessage(`{"coordinates":[[[0,1],[2,1],[2,3],[0,3],[0,1]]],"type":"Polygon"}`)}},
		{`S_CROSSES(geometry, MULTIPOINT((1 2), (3 4)))`, store.ExprSpatial{Op: "S_CROSSES", Geometry: json.RawMessage(`{"coordinates":[[1,2],[3,4]],"type":"MultiPoint"}`)}},
		{`S_TOUCHES(geometry, GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1)))`, store.ExprSpatial{Op: "S_TOUCHES",
			Geometry: json.RawMessage(`{"geometries":[{"coordinates":[1,2],"type":"Point"},{"coordinates":[[0,0],[1,1]],"type":"LineString"}],"type":"GeometryCollection"}`)}},
	} {
		got, err := cql2.ParseText(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

// TestParseJSON reads CQL2 JSON into the same expressions as its text.
func TestParseJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ json, text string }{
		{`{"op":"and","args":[{"op":">","args":[{"property":"pop"},5]},{"op":"like","args":[{"property":"name"},"A%"]}]}`, `pop > 5 AND name LIKE 'A%'`},
		{`{"op":"not","args":[{"op":"isNull","args":[{"property":"x"}]}]}`, `x IS NOT NULL`},
		{`{"op":"in","args":[{"property":"k"},["a",1]]}`, `k IN ('a', 1)`},
		{`{"op":"between","args":[{"property":"p"},1,2]}`, `p BETWEEN 1 AND 2`},
		{`{"op":"s_within","args":[{"property":"geometry"},{"bbox":[0,1,2,3]}]}`, `S_WITHIN(geometry, BBOX(0,1,2,3))`},
		{`{"op":"s_intersects","args":[{"type":"Point","coordinates":[1,2]},{"property":"geometry"}]}`, `S_INTERSECTS(geometry, POINT(1 2))`},
	} {
		fromJSON, err := cql2.ParseJSON([]byte(c.json))
		require.NoError(t, err, c.json)
		fromText, err := cql2.ParseText(c.text)
		require.NoError(t, err, c.text)
		require.Equal(t, fromText, fromJSON, c.json)
	}
}

// TestRefused: filters that are not CQL2 this package reads are refused
// with a message, never passed on.
func TestRefused(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		``, `pop >`, `pop > 5 AND`, `pop = 'a`, `a = b`, `1 = 2`, `pop ! 5`, `NOT`, `(a = 1`, `a = 1)`,
		`name LIKE 5`, `pop BETWEEN 'a' AND 2`, `k IN ()`, `x IS 5`, `S_INTERSECTS(geometry, geometry)`,
		`S_INTERSECTS(POINT(1 2), POINT(1 2))`, `S_INTERSECTS(geometry, POINT(1))`, `S_INTERSECTS(geometry, POLYGON((0 0, 1 1)))`,
		`S_INTERSECTS(geometry, POLYGON((0 0, 1 0, 1 1, 0 2)))`, `S_NEAR(geometry, POINT(1 2))`, `S_WITHIN(geometry, BBOX(2, 0, 1, 1))`,
		`T_AFTER(t, TIMESTAMP('2020-01-01T00:00:00Z'))`, `a = 1; DROP TABLE x`, strings.Repeat("(", 100) + "a = 1" + strings.Repeat(")", 100),
	} {
		_, err := cql2.ParseText(in)
		require.Error(t, err, in)
	}
	for _, in := range []string{
		``, `[]`, `{"op":"="}`, `{"op":"=","args":[{"property":"a"}]}`, `{"op":"drop","args":[]}`, `{"op":"=","args":[{"property":"a"},{"x":1}]}`,
		`{"op":"s_intersects","args":[{"property":"g"},{"type":"Point","coordinates":[1]}]}`, `{"op":"and","args":[true]}`, `{} {}`,
		`{"op":"=","args":[{"property":"a"},1],"extra":1}`,
	} {
		_, err := cql2.ParseJSON([]byte(in))
		require.Error(t, err, in)
	}
}
