package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSyncRunsKeepConcurrencyLimits: a synchronous type's concurrency.global
// and concurrency.per_instance hold for runs in front of their callers; a
// request past a limit answers 429 with Retry-After and creates nothing.
func TestSyncRunsKeepConcurrencyLimits(t *testing.T) {
	t.Parallel()
	for _, taskType := range []string{"sleep_sync_global", "sleep_sync_local"} {
		t.Run(taskType, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			count := func() int {
				var n int
				require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = $1`, taskType).Scan(&n))
				return n
			}
			first := make(chan response, 1)
			go func() {
				first <- b.do("POST", "/tasks", tokClient, map[string]any{"task_type": taskType, "inputs": map[string]any{"duration": "3s"}})
			}()
			require.Eventually(t, func() bool {
				var n int
				require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = $1 AND status = 'ACTIVE'`, taskType).Scan(&n))
				return n == 1
			}, 5*time.Second, 10*time.Millisecond)

			res := b.do("POST", "/tasks", tokClient, map[string]any{"task_type": taskType, "inputs": map[string]any{"duration": "0s"}})
			require.Equal(t, http.StatusTooManyRequests, res.status, string(res.body))
			require.Equal(t, "1", res.header.Get("Retry-After"))
			require.Equal(t, "urn:wf:problem:busy", res.json(t)["type"])
			require.Equal(t, 1, count(), "the refused request created nothing")

			res = <-first
			require.Equal(t, http.StatusOK, res.status, string(res.body))
			require.Equal(t, "COMPLETED", res.json(t)["status"])
			res = b.do("POST", "/tasks", tokClient, map[string]any{"task_type": taskType, "inputs": map[string]any{"duration": "0s"}})
			require.Equal(t, http.StatusOK, res.status, fmt.Sprintf("room again once the first run ended: %s", res.body))
			require.Equal(t, 2, count())
		})
	}
}
