package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// childWorkflowSpecs: a parent whose step starts a child run, both of a
// catalog-scoped type's steps.
const childWorkflowSpecs = `
kind: Workflow
name: kid
inputs: {type: object, required: [n], properties: {n: {type: integer}}}
steps:
  only: {task_type: tenant_job, inputs: {n: inputs.n}}
outputs:
  n: inputs.n
---
kind: Workflow
name: mom
steps:
  call: {workflow: kid, inputs: {n: '1'}}
`

// TestChildRunOverHTTP: a parent's view lists its child step's workflow
// and child run, the child's view names its parent (both checked against
// the OpenAPI document); a token limited to another catalog sees neither,
// and cancelling the parent over HTTP cancels the child.
func TestChildRunOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, options{specs: childWorkflowSpecs})
	cat := b.createCatalog("cat-a")
	b.createCatalog("cat-b")
	id := b.startRun(t, "mom", tokClientLimited, map[string]any{"schema_name": cat["schema_name"]})

	call := b.runStatus(t, id, tokClientLimited)["steps"].([]any)[0].(map[string]any)
	require.Equal(t, "kid", call["workflow"])
	require.Equal(t, "RUNNING", call["status"])
	runs := call["runs"].([]any)
	require.Len(t, runs, 1)
	child := runs[0].(map[string]any)["run_id"].(string)

	kid := b.runStatus(t, child, tokClientLimited)
	require.Equal(t, id, kid["parent_run_id"])
	require.Equal(t, "call", kid["parent_step"])
	require.Equal(t, cat["schema_name"], kid["schema_name"], "a child runs in its parent's tenant")

	b.unchanged(func() {
		for _, run := range []string{id, child} {
			res := b.do("GET", "/workflows/runs/"+run, tokClientB, nil)
			require.Equal(t, http.StatusNotFound, res.status, string(res.body))
		}
	})

	res := b.do("POST", "/workflows/runs/"+id+"/cancel", tokClientLimited, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "CANCELLED", b.runStatus(t, child, tokClientLimited)["status"], "cancelling the parent cancels its child")
}
