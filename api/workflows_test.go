package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// workflowSpecs are the workflows of the API tests: steps of a
// catalog-scoped type, and one only admins may start.
const workflowSpecs = `
kind: Workflow
name: tenant_pipeline
inputs:
  type: object
  required: [n]
  properties: {n: {type: integer}}
steps:
  first: {task_type: tenant_job, inputs: {n: inputs.n}}
  second: {task_type: tenant_job, depends_on: [first], inputs: {n: inputs.n + 1}}
---
kind: Workflow
name: admin_only
api: {start: [admin]}
steps:
  only: {task_type: tenant_job}
`

// TestWorkflowRunsOverHTTP: a client starts a run in its tenant (202,
// Location, its first step's task created), reads it with every step,
// cancels it (its task CANCELLED), cannot cancel it twice (409), retries
// it; bad requests are refused without writing anything.
func TestWorkflowRunsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, options{specs: workflowSpecs})
	cat := b.createCatalog("cat-a")
	schema := cat["schema_name"].(string)

	res := b.do("POST", "/workflows/tenant_pipeline/runs", tokClientLimited, map[string]any{"schema_name": schema, "inputs": map[string]any{"n": 1}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	run := res.json(t)
	require.Equal(t, "RUNNING", run["status"])
	require.Equal(t, res.header.Get("Location"), run["status_url"])
	id := run["run_id"].(string)

	res = b.do("GET", "/workflows/runs/"+id, tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	steps := res.json(t)["steps"].([]any)
	require.Len(t, steps, 2)
	first, second := steps[0].(map[string]any), steps[1].(map[string]any)
	require.Equal(t, "first", first["step"])
	require.Equal(t, "RUNNING", first["status"])
	require.Len(t, first["tasks"], 1)
	require.Equal(t, "PENDING", first["tasks"].([]any)[0].(map[string]any)["status"])
	require.Equal(t, "WAITING", second["status"])
	require.Equal(t, []any{"first"}, second["depends_on"])

	res = b.do("GET", "/workflows/runs?workflow=tenant_pipeline", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Len(t, res.json(t)["runs"], 1)

	res = b.do("POST", "/workflows/runs/"+id+"/cancel", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	cancelled := res.json(t)
	require.Equal(t, "CANCELLED", cancelled["status"])
	require.Equal(t, "CANCELLED", cancelled["steps"].([]any)[0].(map[string]any)["tasks"].([]any)[0].(map[string]any)["status"])
	res = b.do("POST", "/workflows/runs/"+id+"/cancel", tokClientLimited, nil)
	require.Equal(t, http.StatusConflict, res.status, string(res.body))

	res = b.do("POST", "/workflows/runs/"+id+"/retry", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	retried := res.json(t)
	require.Equal(t, "RUNNING", retried["status"])
	require.EqualValues(t, 2, retried["attempt"])
	require.Len(t, retried["steps"].([]any)[0].(map[string]any)["tasks"], 2, "the cancelled task and the new one")

	b.unchanged(func() {
		res = b.do("POST", "/workflows/tenant_pipeline/runs", tokClientLimited, map[string]any{"schema_name": schema, "inputs": map[string]any{"n": "one"}})
		require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
		require.Equal(t, []string{"/inputs/n"}, problemPointers(t, res))
		res = b.do("POST", "/workflows/nope/runs", tokClient, map[string]any{})
		require.Equal(t, http.StatusNotFound, res.status, string(res.body))
		res = b.do("POST", "/workflows/admin_only/runs", tokClient, map[string]any{"schema_name": schema})
		require.Equal(t, http.StatusForbidden, res.status, string(res.body))
		res = b.do("POST", "/workflows/tenant_pipeline/runs", tokClientLimited, map[string]any{"inputs": map[string]any{"n": 1}})
		require.Equal(t, http.StatusNotFound, res.status, "a limited token may not start a run in system: %s", res.body)
	})
}

// TestWorkflowRunsStayInTheirTenant: a run of one catalog's tenant is not
// found by a token limited to another catalog, which can neither read,
// list, cancel nor retry it.
func TestWorkflowRunsStayInTheirTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, options{specs: workflowSpecs})
	cat := b.createCatalog("cat-a")
	b.createCatalog("cat-b")
	id := b.startRun(t, "tenant_pipeline", tokClientLimited, map[string]any{"schema_name": cat["schema_name"], "inputs": map[string]any{"n": 1}})

	b.unchanged(func() {
		for _, req := range [][2]string{{"GET", "/workflows/runs/" + id}, {"POST", "/workflows/runs/" + id + "/cancel"}, {"POST", "/workflows/runs/" + id + "/retry"}} {
			res := b.do(req[0], req[1], tokClientB, nil)
			require.Equal(t, http.StatusNotFound, res.status, "%s %s: %s", req[0], req[1], res.body)
		}
		res := b.do("GET", "/workflows/runs", tokClientB, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Empty(t, res.json(t)["runs"])
		res = b.do("POST", "/workflows/tenant_pipeline/runs", tokClientB, map[string]any{"schema_name": cat["schema_name"], "inputs": map[string]any{"n": 1}})
		require.Equal(t, http.StatusNotFound, res.status, string(res.body))
	})
	res := b.do("GET", "/workflows/runs", tokAdmin, nil)
	require.Len(t, res.json(t)["runs"], 1)

	// The tenant filter: another tenant's name lists nothing, and a limited
	// token asking for a tenant it may not see gets nothing either.
	schema := cat["schema_name"].(string)
	res = b.do("GET", "/workflows/runs?schema_name="+schema, tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Len(t, res.json(t)["runs"], 1)
	res = b.do("GET", "/workflows/runs?schema_name=s_cat_b", tokAdmin, nil)
	require.Empty(t, res.json(t)["runs"])
	res = b.do("GET", "/workflows/runs?schema_name="+schema, tokClientB, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Empty(t, res.json(t)["runs"])
	res = b.do("GET", "/workflows/runs?schema_name="+schema, tokClientLimited, nil)
	require.Len(t, res.json(t)["runs"], 1)
}

// TestCancellingAStepTaskFailsItsRun: POST /tasks/{id}/cancel on the task
// of a run's step fails the run (its step CANCELLED) as the cancel
// commits, so the run's status says so at once; the run can be retried.
func TestCancellingAStepTaskFailsItsRun(t *testing.T) {
	t.Parallel()
	b := setup(t, options{specs: workflowSpecs})
	cat := b.createCatalog("cat-a")
	id := b.startRun(t, "tenant_pipeline", tokClientLimited, map[string]any{"schema_name": cat["schema_name"], "inputs": map[string]any{"n": 1}})
	first := b.runStatus(t, id, tokClientLimited)["steps"].([]any)[0].(map[string]any)
	taskID := first["tasks"].([]any)[0].(map[string]any)["task_id"].(string)

	res := b.do("POST", "/tasks/"+taskID+"/cancel", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	run := b.runStatus(t, id, tokClientLimited)
	require.Equal(t, "FAILED", run["status"])
	require.Contains(t, run["error"], "step first was cancelled")
	steps := run["steps"].([]any)
	require.Equal(t, "CANCELLED", steps[0].(map[string]any)["status"])
	// The step after it never ran: CANCELLED, not WAITING as if it might.
	require.Equal(t, "CANCELLED", steps[1].(map[string]any)["status"])
	require.Contains(t, steps[1].(map[string]any)["error"], "did not run: workflow run "+id+" failed")

	res = b.do("POST", "/workflows/runs/"+id+"/retry", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "RUNNING", res.json(t)["status"])
}

// startRun starts a run of workflow (202) and answers its run_id.
func (b *bundle) startRun(t *testing.T, workflow, token string, body map[string]any) string {
	t.Helper()
	res := b.do("POST", "/workflows/"+workflow+"/runs", token, body)
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	return res.json(t)["run_id"].(string)
}

// runStatus answers GET /workflows/runs/{id} (200).
func (b *bundle) runStatus(t *testing.T, id, token string) map[string]any {
	t.Helper()
	res := b.do("GET", "/workflows/runs/"+id, token, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	return res.json(t)
}
