package cli

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/worker"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// execLimitedSpecs: a type capped at one ACTIVE task per tenant, one
// limited to one start per tenant a day, and one without limits (for the
// pauses).
const execLimitedSpecs = `kind: TaskType
name: capped
description: One at a time per tenant.
handler: {builtin: noop}
concurrency: {per_tenant: 1}
---
kind: TaskType
name: rated
description: One start per tenant a day.
handler: {builtin: noop}
rate_limit: {per_tenant: 1, interval: 24h}
---
kind: TaskType
name: plain
description: No limits.
handler: {builtin: noop}
`

// execLimitsEnv is a wf installation with execLimitedSpecs, and its store.
func execLimitsEnv(t *testing.T) (*wfEnv, *store.Store) {
	t.Helper()
	e := newWFEnv(t, map[string]string{"limited.yaml": execLimitedSpecs})
	return e, store.New(dbtest.PoolFor(t, e.url))
}

// countTasks counts the tasks of taskType.
func countTasks(t *testing.T, st *store.Store, taskType string) int {
	t.Helper()
	var n int
	require.NoError(t, st.DB().QueryRow(t.Context(), `SELECT count(*) FROM tasks.tasks WHERE task_type = $1`, taskType).Scan(&n))
	return n
}

// requirePending checks that task id is PENDING and was never claimed.
func requirePending(t *testing.T, e *wfEnv, id uuid.UUID) {
	t.Helper()
	task := e.show(id)
	require.Equal(t, wftype.StatusPending, task.Status)
	require.Zero(t, task.Attempts, "a refused wf exec claimed nothing")
}

// TestExecCountsItsStartInTheRateWindow: a task `wf exec TASK_TYPE` creates
// and runs counts as a start of its type's rate window, which the claims
// of wf run read (docs/claiming.md, "Limits: concurrency and rate").
func TestExecCountsItsStartInTheRateWindow(t *testing.T) {
	t.Parallel()
	e, st := execLimitsEnv(t)
	code, task, errOut := e.execJSON("rated", `{}`)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, wftype.StatusCompleted, task.Status)
	var starts int
	err := st.DB().QueryRow(t.Context(), `
SELECT coalesce(sum(starts), 0) FROM tasks.rate_windows
WHERE task_type = 'rated' AND schema_name = 'system'`).Scan(&starts)
	require.NoError(t, err)
	require.Equal(t, 1, starts, "wf exec started a task of rated that no rate window counts")
}

// TestExecKeepsThePerTenantCap: beside a tenant's ACTIVE task of a type
// capped at one per tenant, `wf exec TASK_TYPE` and `wf exec --task-id` on
// a PENDING task refuse, exit 1 naming the limit and change nothing;
// --force runs the task anyway.
func TestExecKeepsThePerTenantCap(t *testing.T) {
	t.Parallel()
	e, st := execLimitsEnv(t)
	running := e.enqueue("capped", map[string]any{})
	claimed, err := st.ClaimTasks(t.Context(), store.ClaimParams{Owner: "elsewhere", Total: 1,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "capped", Max: 1, Lease: time.Hour}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, running, claimed[0].ID)
	pending := e.enqueue("capped", map[string]any{})

	code, _, errOut := e.exec("capped", `{}`)
	require.Equal(t, ExitFailure, code, "wf exec ran a second capped task of the tenant beside its ACTIVE one")
	require.Contains(t, errOut, "concurrency.per_tenant")
	require.Contains(t, errOut, "--force")
	require.Equal(t, 2, countTasks(t, st, "capped"), "the refused wf exec created nothing")

	code, _, errOut = e.exec("--task-id", pending.String())
	require.Equal(t, ExitFailure, code, "wf exec --task-id ran a second capped task of the tenant beside its ACTIVE one")
	require.Contains(t, errOut, "concurrency.per_tenant")
	requirePending(t, e, pending)

	code, task, errOut := e.execJSON("--force", "--task-id", pending.String())
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, wftype.StatusCompleted, task.Status)
}

// TestExecHonoursPauses: while a task's type or tenant is paused, `wf exec
// --task-id` on a PENDING task and `wf exec TASK_TYPE` refuse, exit 1
// naming the pause and change nothing; --force runs the task, and a task
// named by --task-id runs whatever its run_after.
func TestExecHonoursPauses(t *testing.T) {
	t.Parallel()
	e, st := execLimitsEnv(t)
	later := e.runID("task_id", "enqueue", "--in", "1h", "--format", "json", "plain")

	for _, pause := range [][]string{{"--type", "plain"}, {"--tenant", "system"}} {
		code, _, errOut := e.run(append([]string{"tasks", "pause", "--reason", "bucket quota"}, pause...)...)
		require.Equal(t, ExitOK, code, errOut)

		code, _, errOut = e.exec("--task-id", later.String())
		require.Equal(t, ExitFailure, code, "wf exec --task-id ran a task while %v is paused", pause)
		require.Contains(t, errOut, "is paused (bucket quota)")
		requirePending(t, e, later)
		code, _, errOut = e.exec("plain", `{}`)
		require.Equal(t, ExitFailure, code, "wf exec ran a new task while %v is paused", pause)
		require.Contains(t, errOut, "--force")
		require.Equal(t, 1, countTasks(t, st, "plain"), "the refused wf exec created nothing")

		code, _, errOut = e.run(append([]string{"tasks", "resume"}, pause...)...)
		require.Equal(t, ExitOK, code, errOut)
	}

	code, _, errOut := e.run("tasks", "pause", "--type", "plain")
	require.Equal(t, ExitOK, code, errOut)
	code, task, errOut := e.execJSON("--force", "--task-id", later.String())
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, wftype.StatusCompleted, task.Status, "forced, an hour before its run_after")
}

// TestExecSaysWhenTheRateWindowEnds: a wf exec refused by rate_limit says
// when the window that has no room ends (whole seconds, rounded up), as the
// worker's refusal tells it.
func TestExecSaysWhenTheRateWindowEnds(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("error creating a rated task: %w", &worker.BusyError{TaskType: "rated", Reason: store.HeldRate,
		Detail: "the rate limit's starts in this 24h0m0s window are used up (rate_limit)", RetryAfter: 3*time.Hour + 1500*time.Millisecond})
	err := execTakeError(nil, formatText, refused)
	var exit cli.ExitCoder
	require.ErrorAs(t, err, &exit)
	require.Equal(t, ExitFailure, exit.ExitCode())
	require.Equal(t, "error creating a rated task: task type rated: the rate limit's starts in this 24h0m0s window are used up (rate_limit)"+
		" (a new window opens in 3h0m2s); nothing was changed (--force runs it anyway)", err.Error())
}
