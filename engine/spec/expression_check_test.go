package spec

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTypeMismatch(t *testing.T) {
	t.Parallel()
	str, integer, number, boolean := reflect.TypeFor[string](), reflect.TypeFor[int](), reflect.TypeFor[float64](), reflect.TypeFor[bool]()
	obj := structType([]field{{name: "path", typ: str}})
	for _, tc := range []struct {
		got, want reflect.Type
		mismatch  bool
	}{
		{str, str, false},
		{integer, number, false}, // an integer is a number
		{number, integer, false}, // a number may be whole
		{anyType, str, false},    // unknown: checked at run time
		{str, anyType, false},
		{nil, str, false},
		{reflect.TypeFor[time.Time](), str, false}, // RFC 3339 text in JSON
		{reflect.TypeFor[map[string]any](), obj, false},
		{reflect.TypeFor[[]any](), reflect.TypeFor[[]string](), false},
		{integer, str, true},
		{str, integer, true},
		{boolean, str, true},
		{reflect.TypeFor[[]string](), str, true},
		{reflect.TypeFor[[]string](), reflect.TypeFor[[]int](), true},
		{obj, structType([]field{{name: "path", typ: integer}}), true},
		{obj, structType([]field{{name: "size", typ: integer}}), false},
	} {
		require.Equal(t, tc.mismatch, typeMismatch(tc.got, tc.want, 0), "%v into %v", tc.got, tc.want)
	}
}

func TestDescribeType(t *testing.T) {
	t.Parallel()
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[string]():    "a string",
		reflect.TypeFor[int]():       "an integer",
		reflect.TypeFor[float64]():   "a number",
		reflect.TypeFor[[]string]():  "a list of strings",
		reflect.TypeFor[[]int]():     "a list of integers",
		reflect.TypeFor[[][]int]():   "a list of lists",
		reflect.TypeFor[[]any]():     "a list",
		reflect.TypeFor[time.Time](): "a time",
		structType(nil):              "an object",
	} {
		require.Equal(t, want, describeType(typ))
	}
}

func TestFindAlias(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		lines     []string
		line, col int
		anchors   []string
	}{
		{"plain", []string{"a: 1", "b: *x"}, 2, 4, nil},
		{"in a flow mapping", []string{"a: {k: *x}"}, 1, 8, nil},
		{"in a list", []string{"a:", "  - *x"}, 2, 5, nil},
		{"merge key", []string{"a: &y {k: 1}", "b:", "  <<: *x"}, 3, 7, []string{"y"}},
		{"skips quotes and comments", []string{`a: "*x"`, "b: '*x' # *x", "c: *x"}, 3, 4, nil},
		{"skips block scalars", []string{"a: |", "  *x", "b: *x"}, 3, 4, nil},
		{"after its anchor is another name", []string{"a: &x 1", "b: *x", "c: *xx"}, 0, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line, col, anchors, ok := findAlias(tc.lines, "x")
			require.Equal(t, tc.line != 0, ok)
			require.Equal(t, tc.line, line)
			require.Equal(t, tc.col, col)
			if ok {
				require.Equal(t, tc.anchors, anchors)
			}
		})
	}
}

func TestBoundsRuleOut(t *testing.T) {
	t.Parallel()
	n := func(s string) json.Number { return json.Number(s) }
	zoom := map[string]any{"type": "integer", "minimum": n("0"), "maximum": n("22")}
	positive := map[string]any{"type": "integer", "exclusiveMinimum": n("0")}
	ratio := map[string]any{"type": "number", "exclusiveMinimum": n("0"), "exclusiveMaximum": n("1")}
	for _, tc := range []struct {
		schema map[string]any
		op     string
		f      float64
		never  bool
	}{
		{zoom, ">", 22, true},
		{zoom, ">", 21, false},
		{zoom, ">=", 22, false},
		{zoom, ">=", 23, true},
		{zoom, "<", 0, true},
		{zoom, "<=", 0, false},
		{zoom, "==", 30, true},
		{zoom, "==", 22, false},
		{zoom, "==", -1, true},
		{positive, "<", 1, true}, // an integer above 0 is at least 1
		{positive, "<=", 1, false},
		{ratio, "<", 0.5, false}, // a number above 0 may be below 0.5
		{ratio, "<=", 0, true},
		{ratio, ">=", 1, true},
		{ratio, "==", 1, true},
	} {
		r, ok := boundsOf(tc.schema)
		require.True(t, ok)
		require.Equal(t, tc.never, r.rulesOut(tc.op, tc.f), "x %s %v under %v", tc.op, tc.f, tc.schema)
	}
	_, ok := boundsOf(map[string]any{"type": "integer"})
	require.False(t, ok)
}
