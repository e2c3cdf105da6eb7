package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/engine/readreplica"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestReadsFromAReplica runs the API over a primary and a real streaming
// replica of it (pg_basebackup -R, a second postmaster): the task list
// and the overview are served by the replica while it keeps up (the
// overview by the primary when the replica cannot answer it), a task read
// by id always by the primary. With the replica's replay paused, a
// task just created is shown by id but missing from the list the replica
// serves; once the replica lags more than the monitor's MaxLag, the list
// falls back to the primary and shows it; when replay resumes the replica
// catches up and serves the list again, task included.
func TestReadsFromAReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary and a standby")
	}
	t.Parallel()
	primaryURL, replicaURL := dbtest.Replica(t)
	primary, replica := dbtest.PoolFor(t, primaryURL), dbtest.PoolFor(t, replicaURL)
	const maxLag = 8 * time.Second
	mon, err := readreplica.New(readreplica.Config{Primary: store.New(primary), Replica: store.New(replica),
		MaxLag: maxLag, Interval: 100 * time.Millisecond, Logger: quietLogger})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mon.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	b := setup(t, options{pool: primary, reads: mon})

	listHas := func(id string) (from string, found bool) {
		t.Helper()
		res := b.do(http.MethodGet, "/tasks?limit=200", tokAdmin, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		for _, item := range res.json(t)["items"].([]any) {
			if item.(map[string]any)["task_id"] == id {
				found = true
			}
		}
		return res.header.Get(api.ReadFromHeader), found
	}
	require.Eventually(t, func() bool { from, _ := listHas(""); return from == "replica" },
		time.Minute, 50*time.Millisecond, "the replica never served the list")
	// The overview reads the PENDING snapshot, which a leader refreshes on
	// the primary (a replica cannot write a stale one anew): refreshed
	// here, it reaches the replica, which then serves /stats.
	_, err = store.New(primary).RefreshPendingSnapshot(b.ctx, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res := b.do(http.MethodGet, "/stats", tokAdmin, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		return res.header.Get(api.ReadFromHeader) == "replica"
	}, time.Minute, 50*time.Millisecond, "the replica never served the overview")
	// Readiness reports the replica; it never requires it.
	replicaReady := func() string {
		t.Helper()
		res := b.do(http.MethodGet, "/readyz", "", nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		return res.json(t)["replica"].(map[string]any)["status"].(string)
	}
	require.Equal(t, "ok", replicaReady())

	// Replay paused: the replica stops at what it has.
	_, err = replica.Exec(b.ctx, `SELECT pg_wal_replay_pause()`)
	require.NoError(t, err)
	created := b.do(http.MethodPost, "/tasks", tokAdmin, map[string]any{"task_type": "tenant_job",
		"schema_name": "system", "inputs": map[string]any{"n": 1}, "run_in": "1h"})
	require.Equal(t, http.StatusAccepted, created.status, string(created.body))
	id := created.json(t)["task_id"].(string)
	start := time.Now()

	// Read by id: the primary, at once.
	got := b.do(http.MethodGet, "/tasks/"+id, tokAdmin, nil)
	require.Equal(t, http.StatusOK, got.status, string(got.body))
	require.Empty(t, got.header.Get(api.ReadFromHeader), "a task by id is never read from the replica")

	// The list, within MaxLag: the replica, which has not seen the task.
	from, found := listHas(id)
	if time.Since(start) < maxLag/2 { // on a machine too slow for that, the next step still holds
		require.Equal(t, "replica", from)
		require.False(t, found, "the replica served a task written after its replay was paused")
	}
	lag, ok := mon.Lag()
	t.Logf("replica lag %s (usable %v) %s after the write", lag, ok, time.Since(start))

	// Past MaxLag: the primary serves the list, task included.
	require.Eventually(t, func() bool { from, found := listHas(id); return from == "primary" && found },
		time.Minute, 100*time.Millisecond, "the list never fell back to the primary")
	lag, ok = mon.Lag()
	require.False(t, ok && lag <= maxLag, "lag %s", lag)
	require.Contains(t, []string{"lagging", "unusable"}, replicaReady(), "behind, and the server still ready")

	// Replay resumed: the replica catches up and serves the list again.
	_, err = replica.Exec(b.ctx, `SELECT pg_wal_replay_resume()`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { from, found := listHas(id); return from == "replica" && found },
		time.Minute, 100*time.Millisecond, "the replica never caught up")
}
