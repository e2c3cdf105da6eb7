package ingest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAttributeMappingApply: select, rename and cast, and the values no
// cast accepts.
func TestAttributeMappingApply(t *testing.T) {
	t.Parallel()
	m := &AttributeMapping{Select: []string{"a", "b", "c", "d", "e"}, Rename: map[string]string{"a": "alpha"},
		Cast: map[string]string{"a": "integer", "b": "number", "c": "string", "d": "boolean"}}
	require.Empty(t, m.check())
	props := map[string]any{"a": "42", "b": json.Number("1.50"), "c": json.Number("7"), "d": "Yes", "e": nil, "dropped": true}
	out, text, err := m.apply(props)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"alpha": json.Number("42"), "b": json.Number("1.5"), "c": "7", "d": true, "e": nil}, out)
	require.JSONEq(t, `{"alpha":42,"b":1.5,"c":"7","d":true,"e":null}`, string(text))
	for _, c := range []struct {
		v   any
		typ string
	}{{"4.5", "integer"}, {"x", "number"}, {"1e400", "number"}, {map[string]any{}, "integer"}, {"maybe", "boolean"}, {json.Number("2"), "boolean"}} {
		_, err := cast(c.v, c.typ)
		require.Error(t, err, "%v as %s", c.v, c.typ)
	}
	for _, bad := range []*AttributeMapping{
		{Cast: map[string]string{"a": "date"}},
		{Select: []string{"a"}, Rename: map[string]string{"b": "c"}},
		{Rename: map[string]string{"a": "x", "b": "x"}},
		{Select: []string{"a", "x"}, Rename: map[string]string{"a": "x"}},
		{Select: []string{""}},
	} {
		require.NotEmpty(t, bad.check(), "%+v", bad)
	}
}
