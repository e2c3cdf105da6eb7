package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// review4LimitedSpecs: a type capped at one ACTIVE task per tenant, and one
// limited to one start per tenant a day.
const review4LimitedSpecs = `kind: TaskType
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
`

// `wf exec TASK_TYPE` (and `--task-id` on a PENDING task) creates and claims
// its task with a worker built without CheckLimits: a type's
// concurrency.per_tenant and rate_limit are neither checked nor counted, so
// it starts a task past a full per-tenant cap, and its start is missing from
// tasks.rate_windows, where the claims then start a whole window's room on
// top of it (README, Limits: "across every instance, how many of its tasks
// run and start").
func TestReview4ExecHonoursTheTypesLimits(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"limited.yaml": review4LimitedSpecs})
	st := store.New(dbtest.PoolFor(t, e.url))

	// The rate window counts a start of wf exec.
	code, task, errOut := e.execJSON("rated", `{}`)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, wftype.StatusCompleted, task.Status)
	var starts int
	err := st.DB().QueryRow(t.Context(), `
SELECT coalesce(sum(starts), 0) FROM tasks.rate_windows
WHERE task_type = 'rated' AND schema_name = 'system'`).Scan(&starts)
	require.NoError(t, err)
	require.Equal(t, 1, starts, "wf exec started a task of rated that no rate window counts")

	// With the tenant's one capped task ACTIVE, wf exec starts no other.
	id := e.enqueue("capped", map[string]any{})
	claimed, err := st.ClaimTasks(t.Context(), store.ClaimParams{Owner: "elsewhere", Total: 1,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "capped", Max: 1, Lease: time.Hour}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, id, claimed[0].ID)
	code, task, _ = e.execJSON("capped", `{}`)
	require.NotEqual(t, wftype.StatusCompleted, task.Status,
		"wf exec ran a second capped task of the tenant (exit %d) beside its ACTIVE one", code)
}
