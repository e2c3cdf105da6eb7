package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCatalogWithoutCloud: on an instance without gcp.project (the
// bundle's engine, as `wf run` without a gcp section) /readyz lists the gcp
// task types as unserved, naming the setting, and stays ready; a catalog
// created and deleted there leaves no gcp_provision or gcp_catalog_cleanup
// task, neither one COMPLETED as if it had provisioned nor one PENDING for
// nobody: their subscriptions are inactive here, while the event's other
// subscription (the webhook fan-out) creates its task from the same event.
func TestCatalogWithoutCloud(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startFeatureEngine(t, b, t.TempDir())

	res := b.do("GET", "/readyz", "", nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	m := res.json(t)
	require.Equal(t, "ready", m["status"])
	const reason = "gcp.project is not set (WF_GCP_PROJECT)"
	require.Equal(t, []any{
		map[string]any{"task_type": "gcp_catalog_cleanup", "handler": "gcp_catalog_cleanup", "reason": reason},
		map[string]any{"task_type": "gcp_provision", "handler": "gcp_provision", "reason": reason},
		map[string]any{"task_type": "gcs_storage_event", "handler": "gcs_storage_event", "reason": reason},
	}, m["unserved_task_types"], "the search types are served: the bundle's Elasticsearch is configured")

	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx, q, args...).Scan(&n))
		return n
	}
	// The consumer creates every task of one event in one transaction: once
	// the fan-out task of an event exists, the event's tasks are all there.
	dispatched := func(eventType string) func() bool {
		return func() bool {
			return count(`SELECT count(*) FROM tasks.tasks WHERE task_type = 'event_dispatch'
AND inputs->>'event_type' = $1 AND inputs->'payload'->>'catalog_id' = 'nocloud'`, eventType) == 1
		}
	}
	b.createCatalog("nocloud", "roads")
	require.Eventually(t, dispatched("catalog.created"), time.Minute, 20*time.Millisecond, "catalog.created was not consumed")
	require.Equal(t, 0, count(`SELECT count(*) FROM tasks.tasks WHERE task_type = 'gcp_provision'`))

	res = b.do("DELETE", "/catalogs/nocloud", tokAdmin, nil)
	require.Less(t, res.status, 300, string(res.body))
	require.Eventually(t, dispatched("catalog.dropped"), time.Minute, 20*time.Millisecond, "the catalog was not dropped")
	require.Equal(t, 0, count(`SELECT count(*) FROM tasks.tasks WHERE task_type LIKE 'gc%'`))
}
