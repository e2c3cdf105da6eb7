package spec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// compileYAML compiles one in-memory spec file with the test options.
func compileYAML(t *testing.T, src string) *Set {
	t.Helper()
	set, err := Compile([]Source{{Name: "test.yaml", Data: []byte(src)}}, testOptions())
	require.NoError(t, err)
	return set
}

// taskType compiles src and returns its task type called name.
func taskType(t *testing.T, src, name string) *TaskType {
	t.Helper()
	tt, ok := compileYAML(t, src).TaskType(name)
	require.True(t, ok)
	return tt
}

// loadErrors loads the spec files at path, which must fail with at least one
// spec.Errors problem, and returns them.
func loadErrors(t *testing.T, opts Options, path string) Errors {
	t.Helper()
	set, err := Load(opts, path)
	require.Nil(t, set, "wf validate accepted an invalid spec")
	var errs Errors
	require.True(t, errors.As(err, &errs), "want spec.Errors, got %v", err)
	require.NotEmpty(t, errs)
	return errs
}

// allKinds loads testdata/valid/all_kinds.yaml, a set with a document of
// every kind.
func allKinds(t *testing.T) *Set {
	t.Helper()
	set, err := Load(testOptions(), "testdata/valid/all_kinds.yaml")
	require.NoError(t, err)
	return set
}
