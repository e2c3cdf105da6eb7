package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wftype"
)

// TestTasksShowAttempts: `wf tasks show` prints the attempt history, in
// text and in JSON.
func TestTasksShowAttempts(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"doomed.yaml": `
kind: TaskType
name: doomed
description: Fails at once, no retries.
handler: {builtin: fail}
max_retries: 0
inputs: {type: object, properties: {message: {type: string}}}
`})
	id := e.enqueue("doomed", map[string]any{"message": "the disk is on fire"})
	code, _, _ := e.exec("--task-id", id.String())
	require.NotEqual(t, ExitOK, code)

	code, out, errOut := e.run("tasks", "show", id.String())
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "attempts (the last 20):")
	require.Regexp(t, `(?m)^1\s+\S+\s+\S+\s+\S+\s+DEAD_LETTER\s+.*the disk is on fire$`, out)

	code, out, errOut = e.run("tasks", "show", "--format", "json", id.String())
	require.Equal(t, ExitOK, code, errOut)
	var got struct {
		Status         wftype.TaskStatus `json:"status"`
		AttemptHistory []wftype.Attempt  `json:"attempt_history"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, wftype.StatusDeadLetter, got.Status)
	require.Len(t, got.AttemptHistory, 1)
	require.Equal(t, wftype.StatusDeadLetter, got.AttemptHistory[0].Outcome)
	require.Contains(t, *got.AttemptHistory[0].Error, "the disk is on fire")
	require.NotNil(t, got.AttemptHistory[0].OwnerID)
}
