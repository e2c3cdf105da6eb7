package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/schemas"
)

func TestSchemaCommand(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		data, err := schemas.Read(name)
		require.NoError(t, err)
		return string(data)
	}

	code, out, errOut := runWF(t, "schema")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, read(schemas.SpecSchema), out)
	require.Contains(t, out, `"$id": "`+schemas.ID(schemas.SpecSchema)+`"`)

	for _, kind := range []string{"TaskType", "tasktype", "task_type", "task_type.schema.json"} {
		code, out, errOut = runWF(t, "schema", kind)
		require.Equal(t, ExitOK, code, errOut)
		require.Equal(t, read(schemas.TaskTypeSchema), out, kind)
	}
	code, out, _ = runWF(t, "schema", "config")
	require.Equal(t, ExitOK, code)
	require.Equal(t, read("config.schema.json"), out)

	code, out, errOut = runWF(t, "schema", "Tasktypes")
	require.Equal(t, ExitUsage, code)
	require.Empty(t, out)
	require.Contains(t, errOut, `unknown schema kind "Tasktypes"; expected one of spec, TaskType, Subscription, Schedule, Runner, Workflow, defs, config, envelope`)

	code, out, _ = runWF(t, "schema", "--list")
	require.Equal(t, ExitOK, code)
	for _, k := range schemaKinds {
		require.Contains(t, out, schemas.ID(k.file))
	}

	dir := filepath.Join(t.TempDir(), "schemas")
	code, out, errOut = runWF(t, "schema", "--out", dir)
	require.Equal(t, ExitOK, code, errOut)
	for _, k := range schemaKinds {
		require.Contains(t, out, filepath.Join(dir, k.file))
		got, err := os.ReadFile(filepath.Join(dir, k.file))
		require.NoError(t, err)
		require.Equal(t, read(k.file), string(got))
	}

	code, _, _ = runWF(t, "schema", "--out", dir, "TaskType")
	require.Equal(t, ExitUsage, code)
	code, _, _ = runWF(t, "schema", "a", "b")
	require.Equal(t, ExitUsage, code)
}
