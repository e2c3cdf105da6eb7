package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// notSpec refuses values through "not" keywords of every shape notMessage
// words, and one it cannot.
const notSpec = `
kind: TaskType
name: guarded
handler: {builtin: noop}
inputs:
  type: object
  not: {required: [run_at, run_in]}
  properties:
    run_at: {type: string}
    run_in: {type: string}
    source:
      type: string
      not: {title: "a path with a '..' segment", pattern: '(^|/)\.\.(/|$)'}
    path: {type: string, not: {pattern: '^/'}}
    schema:
      type: string
      not:
        anyOf:
          - {type: string, enum: [system, public]}
          - {pattern: '^pg_'}
    mode: {not: {const: legacy}}
    size: {not: {type: [string, "null"]}}
    three: {type: object, not: {required: [a, b, c]}}
    odd: {type: integer, not: {multipleOf: 2}}
`

// TestNotViolationsInPlainWords: a value a "not" keyword refuses gets a
// message that says what was refused, never the library's "not failed".
func TestNotViolationsInPlainWords(t *testing.T) {
	t.Parallel()
	tt := taskType(t, notSpec, "guarded")
	for _, c := range []struct {
		name   string
		inputs map[string]any
		want   string
	}{
		{"Title", map[string]any{"source": "data/../secret"}, `/source: must not be a path with a '..' segment; got "data/../secret"`},
		{"Pattern", map[string]any{"path": "/etc"}, `/path: must not match the pattern ^/; got "/etc"`},
		{"AnyOf", map[string]any{"schema": "pg_catalog"}, `/schema: must not be one of system, public or match the pattern ^pg_; got "pg_catalog"`},
		{"Const", map[string]any{"mode": "legacy"}, `/mode: must not be legacy; got "legacy"`},
		{"Types", map[string]any{"size": nil}, `/size: must not be a string or null; got null`},
		{"BothFields", map[string]any{"run_at": "x", "run_in": "y"}, `(root): must not have both run_at and run_in`},
		{"AllFields", map[string]any{"three": map[string]any{"a": 1, "b": 2, "c": 3}}, `/three: must not have all of a, b and c`},
		{"Unworded", map[string]any{"odd": 4}, `/odd: is a value this field refuses (it matches what the schema's "not" excludes); got 4`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := tt.ValidateInputs(c.inputs)
			require.EqualError(t, err, "invalid inputs: "+c.want)
			require.NotContains(t, err.Error(), "not failed")
		})
	}
	require.NoError(t, tt.ValidateInputs(map[string]any{"source": "data/..x/y", "path": "a/b", "schema": "s_a", "mode": "new", "size": 3, "odd": 3}))
}
