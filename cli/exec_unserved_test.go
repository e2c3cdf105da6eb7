package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestExecUnservedType: wf exec of a task type whose service is not
// configured (elasticsearch without elasticsearch.addresses) exits 1
// naming the setting, and creates no task.
func TestExecUnservedType(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"search.yaml": `kind: TaskType
name: index_now
handler: {builtin: elasticsearch}
`})
	code, _, errOut := e.exec("index_now", `{"catalog_id": "cat", "collection_id": "towns"}`)
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, "task type index_now is not served by this instance: elasticsearch.addresses is not set (WF_ELASTICSEARCH_ADDRESSES)")
	var n int
	require.NoError(t, dbtest.PoolFor(t, e.url).QueryRow(t.Context(), `SELECT count(*) FROM tasks.tasks`).Scan(&n))
	require.Zero(t, n, "no task was created")

	// A task that exists (created by hand, or by an instance that serves
	// the type) is left as it is: not taken over only to fail.
	id := e.enqueue("index_now", map[string]any{"catalog_id": "cat", "collection_id": "towns"})
	code, _, errOut = e.exec("--task-id", id.String())
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, "task type index_now is not served by this instance: elasticsearch.addresses is not set")
	task := e.show(id)
	require.Equal(t, wftype.StatusPending, task.Status)
	require.Zero(t, task.Attempts)
}
