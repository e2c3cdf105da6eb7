package cli

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

// TestTasksCancelFailsTheStepsRun: `wf tasks cancel` on the task of a
// workflow step fails its run in the same transaction, as the HTTP cancel
// does (the CLI reads the specs for it only then: TestTaskIDPrefix cancels
// a plain task with an empty specs folder).
func TestTasksCancelFailsTheStepsRun(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"flow.yaml": `
kind: TaskType
name: step_job
handler: {builtin: noop}
---
kind: Workflow
name: two
steps:
  first: {task_type: step_job}
  second: {task_type: step_job, depends_on: [first]}
`})
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
