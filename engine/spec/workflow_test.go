package spec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForEachItemOfObjects runs the inputs of a for_each step over a list
// of objects: the check types item as the list's items, and the program
// that runs reads a field of whatever item it is given.
func TestForEachItemOfObjects(t *testing.T) {
	t.Parallel()
	set, err := Load(testOptions(), "testdata/corpus/valid/for_each_objects.yaml")
	require.NoError(t, err)
	w, ok := set.Workflow("convert_all")
	require.True(t, ok)
	st, ok := w.Step("convert")
	require.True(t, ok)
	env := RunEnv{Steps: map[string]StepState{"list": {Status: "COMPLETED", Outputs: map[string]any{
		"files": []any{map[string]any{"path": "a.tif", "size": 12.0}, map[string]any{"path": "b.tif", "size": 2e6}},
	}}}}
	items, err := st.Items(env)
	require.NoError(t, err)
	require.Len(t, items, 2)
	in, err := st.Inputs(env, items[1], 1)
	require.NoError(t, err)
	require.JSONEq(t, `{"file": "b.tif", "big": true}`, string(in))
}
