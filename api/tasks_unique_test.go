package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// uniqueSpecs is a task type whose keys are held for a day.
const uniqueSpecs = `
kind: TaskType
name: daily_job
scope: CATALOG
handler: {builtin: noop}
inputs: {type: object, properties: {day: {type: string}}}
dedup_key: '"daily:" + string(inputs.day ?? "")'
unique: {period: 24h}
---
kind: TaskType
name: sync_account
scope: CATALOG
handler: {builtin: noop}
inputs: {type: object, properties: {account: {type: integer}}}
dedup_key: '"sync:" + string(inputs.account ?? 0)'
on_duplicate: replace_queued
`

// TestCreateTaskUniquePeriod: a second POST /tasks within the type's
// unique period, after the first task COMPLETED, answers 200 with that
// task (deduplicated); the same key in another tenant creates a task of
// its own and shows nothing of the first.
func TestCreateTaskUniquePeriod(t *testing.T) {
	t.Parallel()
	body := func(schema string) map[string]any {
		return map[string]any{"task_type": "daily_job", "schema_name": schema, "inputs": map[string]any{"day": "2026-12-07"}}
	}
	b, id := setupUnique(t, body)

	claimed, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w", Total: 1,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "daily_job", Max: 1, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	_, err = b.store.FinishTasks(b.ctx, store.FinishParams{Owner: "w"}, []store.Finish{{ID: claimed[0].ID, Status: wftype.StatusCompleted}})
	require.NoError(t, err)

	again := b.do("POST", "/tasks", tokClientB, body("s_cat_b"))
	require.Equal(t, http.StatusOK, again.status, string(again.body))
	got := again.json(t)
	require.Equal(t, id, got["task_id"])
	require.Equal(t, true, got["deduplicated"])
	require.Equal(t, "COMPLETED", got["status"])

	other := b.do("POST", "/tasks", tokClientLimited, body("s_cat_a"))
	require.Equal(t, http.StatusAccepted, other.status, string(other.body))
	require.NotEqual(t, id, other.json(t)["task_id"])
	require.NotContains(t, string(other.body), id)

	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'daily_job'`).Scan(&n))
	require.Equal(t, 2, n)
}

// TestCreateTaskReplacesQueued: a task type with on_duplicate:
// replace_queued answers a second POST /tasks of the key with 202, the new
// task and the id of the one it cancelled; another tenant's same key
// replaces nothing of the first's.
func TestCreateTaskReplacesQueued(t *testing.T) {
	t.Parallel()
	body := func(schema string) map[string]any {
		return map[string]any{"task_type": "sync_account", "schema_name": schema, "inputs": map[string]any{"account": 7}}
	}
	b, id := setupUnique(t, body)
	second := b.do("POST", "/tasks", tokClientB, body("s_cat_b"))
	require.Equal(t, http.StatusAccepted, second.status, string(second.body))
	got := second.json(t)
	require.Equal(t, id, got["replaced_task_id"])
	require.NotEqual(t, id, got["task_id"])
	shown := b.do("GET", "/tasks/"+id, tokClientB, nil)
	require.Equal(t, http.StatusOK, shown.status, string(shown.body))
	require.Equal(t, "CANCELLED", shown.json(t)["status"])

	other := b.do("POST", "/tasks", tokClientLimited, body("s_cat_a"))
	require.Equal(t, http.StatusAccepted, other.status, string(other.body))
	require.NotContains(t, other.json(t), "replaced_task_id")
}

// setupUnique is a bundle with uniqueSpecs and catalogs cat-a and cat-b,
// and the id of a first task created with body("s_cat_b") (202).
func setupUnique(t *testing.T, body func(schema string) map[string]any) (*bundle, string) {
	t.Helper()
	b := setup(t, options{specs: uniqueSpecs})
	b.createCatalog("cat-a")
	b.createCatalog("cat-b")
	first := b.do("POST", "/tasks", tokClientB, body("s_cat_b"))
	require.Equal(t, http.StatusAccepted, first.status, string(first.body))
	return b, first.json(t)["task_id"].(string)
}
