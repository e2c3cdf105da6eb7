package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestEnginesSurviveDatabaseOutage: while two engines work through a stream
// of tasks, the database drops every connection and refuses new ones for a
// few seconds (as during a restart). The engines keep running, reconnect
// when it comes back, finish every task queued before and after, and wake
// up for new tasks again.
func TestEnginesSurviveDatabaseOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	r := newCountingRunner()
	startEngines(t, pool, r, "o1", "o2")

	// The outage is run from a connection to another database of the
	// cluster (a database cannot refuse connections to itself).
	db := pool.Config().ConnConfig.Database
	adminCfg := pool.Config().ConnConfig.Copy()
	adminCfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(ctx, adminCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(ctx) })
	allow := func(yes bool) {
		_, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS %t`, pgx.Identifier{db}.Sanitize(), yes))
		require.NoError(t, err)
	}
	t.Cleanup(func() { allow(true) })

	enqueueCount(t, st, 3000)
	require.Eventually(t, func() bool { return completed(t, pool) > 0 }, 10*time.Second, time.Millisecond)

	allow(false)
	var killed int
	require.NoError(t, admin.QueryRow(ctx, `
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = $1`, db).Scan(&killed))
	require.Positive(t, killed)
	r.mu.Lock()
	ranBefore := len(r.runs)
	r.mu.Unlock()
	time.Sleep(3 * time.Second) // wall time: the real database stays unreachable this long (several poll intervals)
	allow(true)

	// New tasks after the outage are picked up too (the engines listen and
	// poll again).
	enqueueCount(t, st, 300)
	require.Eventually(t, func() bool { return completed(t, pool) == 3300 }, 60*time.Second, 50*time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.runs, 3300)
	again := 0
	for _, n := range r.runs {
		again += n - 1
	}
	t.Logf("%d backends terminated with %d of 3000 tasks run; %d tasks ran more than once", killed, ranBefore, again)
	require.Less(t, ranBefore, 3000, "the outage came mid-stream")
}
