package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
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

// TestTasksStats: `wf tasks stats` counts by status, type and tenant, as
// the database holds them, in text and JSON.
func TestTasksStats(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"noop.yaml": "kind: TaskType\nname: noop\ndescription: Does nothing.\nhandler: {builtin: noop}\n"})
	for range 3 {
		e.enqueue("noop", map[string]any{})
	}
	done := e.enqueue("noop", map[string]any{})
	code, _, errOut := e.exec("--task-id", done.String())
	require.Equal(t, ExitOK, code, errOut)

	code, out, errOut := e.run("tasks", "stats")
	require.Equal(t, ExitOK, code, errOut)
	require.Regexp(t, `(?m)^\s*noop\s+system\s+3\s+0\s+1\s+0\s+0\s+0\s*$`, out)
	require.Contains(t, out, "oldest due PENDING task:")
	require.Contains(t, out, "outbox: 0 pending")

	code, out, errOut = e.run("tasks", "stats", "--format", "json")
	require.Equal(t, ExitOK, code, errOut)
	var got struct {
		Counts []struct {
			Status     string `json:"status"`
			TaskType   string `json:"task_type"`
			SchemaName string `json:"schema_name"`
			Count      int    `json:"count"`
		} `json:"counts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	byStatus := map[string]int{}
	for _, c := range got.Counts {
		require.Equal(t, "noop", c.TaskType)
		byStatus[c.Status] += c.Count
	}
	require.Equal(t, map[string]int{"PENDING": 3, "COMPLETED": 1}, byStatus)

	code, _, _ = e.run("tasks", "stats", "--window", "48h")
	require.Equal(t, ExitUsage, code)
}

// twoStepFlow is a workflow "two" of two steps, second after first, of a
// task type that does nothing.
const twoStepFlow = `
kind: TaskType
name: step_job
handler: {builtin: noop}
---
kind: Workflow
name: two
steps:
  first: {task_type: step_job}
  second: {task_type: step_job, depends_on: [first]}
`

// TestTasksCancelFailsTheStepsRun: `wf tasks cancel` on the task of a
// workflow step fails its run in the same transaction, as the HTTP cancel
// does (the CLI reads the specs for it only then: TestTaskIDPrefix cancels
// a plain task with an empty specs folder).
func TestTasksCancelFailsTheStepsRun(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"flow.yaml": twoStepFlow})
	code, out, errOut := e.run("workflows", "start", "two")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "started run")
	pool := dbtest.PoolFor(t, e.url)
	var run, task uuid.UUID
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT workflow_run_id, task_id FROM tasks.tasks WHERE workflow_step = 'first'`).Scan(&run, &task))

	code, out, errOut = e.run("tasks", "cancel", task.String())
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "cancelled task "+task.String()+"\n", out)
	var status, step string
	require.NoError(t, pool.QueryRow(context.Background(), `
SELECT r.status, s.status FROM tasks.workflow_runs r JOIN tasks.workflow_steps s USING (run_id)
WHERE r.run_id = $1 AND s.step = 'first'`, run).Scan(&status, &step))
	require.Equal(t, "FAILED", status)
	require.Equal(t, "CANCELLED", step)
}

// TestRunIDPrefix: wf workflows show|cancel take a unique prefix of a run
// id, as wf tasks show takes one of a task id; an unknown prefix is a clear
// failure and a malformed one a usage error.
func TestRunIDPrefix(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"flow.yaml": twoStepFlow})
	run := e.runID("run_id", "workflows", "start", "--format", "json", "two")
	require.NotEqual(t, uuid.Nil, run)
	prefix := run.String()[:13]

	code, out, errOut := e.run("workflows", "show", "--format", "json", prefix)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, run.String())
	code, out, errOut = e.run("workflows", "cancel", prefix)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, run.String())

	code, _, errOut = e.run("workflows", "show", "ffffffff-ffff")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `no run id starts with "ffffffff-ffff"`)
	code, _, errOut = e.run("workflows", "show", "xy")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, `"xy" is neither a run id (a UUID) nor a prefix of one`)
}
