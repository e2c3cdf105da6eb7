package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTasksPause: `wf tasks pause|resume|paused` by task type and tenant;
// a type the specs lack, a tenant no catalog has and a missing or double
// target are refused.
func TestTasksPause(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"noop.yaml": "kind: TaskType\nname: noop\ndescription: Does nothing.\nhandler: {builtin: noop}\n"})

	code, _, errOut := e.run("tasks", "pause")
	require.Equal(t, ExitUsage, code, errOut)
	code, _, errOut = e.run("tasks", "pause", "--type", "noop", "--tenant", "system")
	require.Equal(t, ExitUsage, code, errOut)
	code, _, errOut = e.run("tasks", "pause", "--type", "nope")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `no task type "nope"`)
	code, _, errOut = e.run("tasks", "pause", "--tenant", "s_nope")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `s_nope`)

	code, out, errOut := e.run("tasks", "pause", "--type", "noop", "--reason", "maintenance")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "paused task_type noop")
	code, out, _ = e.run("tasks", "pause", "--type", "noop")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "already paused")
	code, _, errOut = e.run("tasks", "pause", "--tenant", "system")
	require.Equal(t, ExitOK, code, errOut)

	code, out, errOut = e.run("tasks", "paused", "--format", "json")
	require.Equal(t, ExitOK, code, errOut)
	var pauses []struct{ Kind, Name string }
	require.NoError(t, json.Unmarshal([]byte(out), &pauses), out)
	require.Len(t, pauses, 2)
	code, out, _ = e.run("tasks", "stats")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "paused task_type noop since")
	require.Contains(t, out, ": maintenance")

	code, _, errOut = e.run("tasks", "resume", "--type", "noop")
	require.Equal(t, ExitOK, code, errOut)
	code, _, errOut = e.run("tasks", "resume", "--type", "noop")
	require.Equal(t, ExitFailure, code, "not paused any more")
	require.Contains(t, errOut, "not paused")
	code, _, _ = e.run("tasks", "resume", "--tenant", "system")
	require.Equal(t, ExitOK, code)
	code, out, _ = e.run("tasks", "paused")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "nothing is paused")
}
