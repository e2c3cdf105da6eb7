package spec

import (
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
