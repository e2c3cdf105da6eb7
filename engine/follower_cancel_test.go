package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/leader"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// blockingRunner runs "count" tasks until their context ends, reporting
// each start and the cause of each end.
type blockingRunner struct {
	started chan uuid.UUID
	ended   chan error
}

func (r *blockingRunner) Name() string  { return "blocking" }
func (r *blockingRunner) Priority() int { return 100 }
func (r *blockingRunner) CanHandle(m wftype.ExecutionMode, tt string) bool {
	return m == wftype.ModeAsync && tt == "count"
}
func (r *blockingRunner) Run(ctx context.Context, t *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	r.started <- t.ID
	<-ctx.Done()
	r.ended <- context.Cause(ctx)
	return nil, context.Cause(ctx)
}

// TestFollowerStopsCancelledTaskAtOnce: a task cancelled while it runs on a
// follower stops within about a poll interval, not at its next heartbeat.
func TestFollowerStopsCancelledTaskAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	st := store.New(pool)

	// The test holds the leader lock, so the engine stays a follower.
	holder, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close(ctx) })
	var locked bool
	require.NoError(t, holder.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, leader.LockName("svc")).Scan(&locked))
	require.True(t, locked)

	r := &blockingRunner{started: make(chan uuid.UUID, 1), ended: make(chan error, 1)}
	e, _ := startEngine(t, pool, "follower", r, func(c *engine.Config) {
		c.PollInterval, c.HeartbeatInterval, c.Grace, c.Slots = 200*time.Millisecond, time.Minute, time.Second, 4
	})

	// The elector listens before its first poll: wait for that poll, or a
	// cancellation sent earlier would reach nobody (the heartbeat would).
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE application_name = 'wf-leader:svc:follower' AND query LIKE '%pg_try_advisory_lock%'
  AND datname = current_database()`).Scan(&n))
		return n > 0
	}, 10*time.Second, 10*time.Millisecond)
	enqueueCount(t, st, 1)
	var id uuid.UUID
	select {
	case id = <-r.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not start the task")
	}
	require.False(t, e.IsLeader())
	_, err = st.CancelTask(ctx, id)
	require.NoError(t, err)
	select {
	case cause := <-r.ended:
		require.ErrorContains(t, cause, "lease")
	case <-time.After(5 * time.Second):
		t.Fatal("the run went on after its task was cancelled (heartbeat interval 1m)")
	}
}
