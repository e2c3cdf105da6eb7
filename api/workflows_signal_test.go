package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// signalSpecs: a run that waits for an approval whose payload has a
// schema, then runs a task with it; one whose signals only admins send.
const signalSpecs = `
kind: Workflow
name: approve_then_run
steps:
  approve:
    approval:
      payload: {type: object, required: [approved], properties: {approved: {type: boolean}, note: {type: string}}}
      timeout: 1h
  run: {task_type: tenant_job, depends_on: [approve], inputs: {n: 'steps.approve.outputs.approved ? 1 : 0'}}
---
kind: Workflow
name: admins_approve
api: {signal: [admin]}
steps:
  approve: {approval: {signal: go_ahead}}
`

// TestSignalOverHTTP: a run's page shows its approval step waiting for
// its signal, until when and where to send it; a token of another
// catalog, a role the workflow does not take signals from, a payload that
// breaks the step's schema, an unknown signal: each is refused and changes
// nothing; the tenant's token sends it, the step completes with the
// payload as outputs and the next step's task is created; a second send
// is a conflict.
func TestSignalOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, options{specs: signalSpecs})
	cat := b.createCatalog("cat-a")
	b.createCatalog("cat-b")
	schema := cat["schema_name"].(string)
	id := b.startRun(t, "approve_then_run", tokClientLimited, map[string]any{"schema_name": schema})
	adminsOnly := b.startRun(t, "admins_approve", tokClientLimited, map[string]any{"schema_name": schema})

	approve := b.runStatus(t, id, tokClientLimited)["steps"].([]any)[0].(map[string]any)
	require.Equal(t, "RUNNING", approve["status"])
	require.Equal(t, "approval", approve["kind"])
	waiting := approve["waiting"].(map[string]any)
	require.Equal(t, "approve", waiting["signal"])
	require.NotEmpty(t, waiting["until"])
	require.Contains(t, waiting["signal_url"], "/workflows/runs/"+id+"/signals/approve")

	path := "/workflows/runs/" + id + "/signals/approve"
	b.unchanged(func() {
		res := b.do("POST", path, tokClientB, map[string]any{"approved": true})
		require.Equal(t, http.StatusNotFound, res.status, "another catalog's token: %s", res.body)
		res = b.do("POST", path, tokWorker, map[string]any{"approved": true})
		require.Equal(t, http.StatusForbidden, res.status, "a worker token: %s", res.body)
		res = b.do("POST", "/workflows/runs/"+adminsOnly+"/signals/go_ahead", tokClientLimited, map[string]any{})
		require.Equal(t, http.StatusForbidden, res.status, "api.signal is [admin]: %s", res.body)
		res = b.do("POST", path, tokClientLimited, map[string]any{"approved": "yes"})
		require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
		require.Equal(t, []string{"/payload/approved"}, problemPointers(t, res))
		res = b.do("POST", path, tokClientLimited, "{not json")
		require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
		res = b.do("POST", "/workflows/runs/"+id+"/signals/nope", tokClientLimited, map[string]any{})
		require.Equal(t, http.StatusNotFound, res.status, string(res.body))
	})

	res := b.do("POST", path, tokClientLimited, map[string]any{"approved": true, "note": "ok"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	steps := res.json(t)["steps"].([]any)
	approve, next := steps[0].(map[string]any), steps[1].(map[string]any)
	require.Equal(t, "COMPLETED", approve["status"])
	require.Nil(t, approve["waiting"])
	require.Equal(t, map[string]any{"approved": true, "note": "ok"}, approve["outputs"])
	require.Equal(t, "RUNNING", next["status"])
	require.Len(t, next["tasks"], 1)
	res = b.do("POST", path, tokClientLimited, map[string]any{"approved": true})
	require.Equal(t, http.StatusConflict, res.status, string(res.body))

	res = b.do("POST", "/workflows/runs/"+adminsOnly+"/signals/go_ahead", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "COMPLETED", res.json(t)["status"])
}
