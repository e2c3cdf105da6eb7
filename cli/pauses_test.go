package cli

import (
	"encoding/json"
	"strings"
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

// TestTasksBulk: `wf tasks bulk-cancel|bulk-requeue` with a dry run, a
// limit and the --all guard.
func TestTasksBulk(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"noop.yaml": "kind: TaskType\nname: noop\ndescription: Does nothing.\nhandler: {builtin: noop}\n"})
	for range 3 {
		e.enqueue("noop", map[string]any{})
	}
	code, _, errOut := e.run("tasks", "bulk-cancel")
	require.Equal(t, ExitUsage, code, errOut)
	require.Contains(t, errOut, "--all")
	code, _, _ = e.run("tasks", "bulk-cancel", "--all", "--status", "FAILED")
	require.Equal(t, ExitUsage, code)

	code, out, errOut := e.run("tasks", "bulk-cancel", "--type", "noop", "--dry-run")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "3 tasks match")
	code, out, errOut = e.run("tasks", "bulk-cancel", "--type", "noop", "--limit", "2")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "cancelled 2 tasks; more match")
	code, out, _ = e.run("tasks", "bulk-cancel", "--all")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "cancelled 1 tasks\n")

	code, out, _ = e.run("tasks", "bulk-requeue", "--all", "--dry-run")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "0 tasks match", "DEAD_LETTER by default")
	code, out, errOut = e.run("tasks", "bulk-requeue", "--all", "--status", "CANCELLED")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "requeued 3 tasks")
	code, out, _ = e.run("tasks", "list", "--status", "PENDING")
	require.Equal(t, ExitOK, code)
	require.Equal(t, 3, strings.Count(out, "noop"), out)
}
