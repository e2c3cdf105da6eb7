package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/runners/builtin"
)

// TestFollowerTakesBackExpiredEventsBesideANonConsumingLeader: a consumer on
// a bus takes back expired event leases only when a signal wakes it, and a
// follower is woken only by its probe. When the leader does not consume
// (events.consume: false), the follower's probe must report the events of a
// consumer that crashed mid-batch (PROCESSING, lease ended), or they stay
// PROCESSING until some other event happens to be emitted.
func TestFollowerTakesBackExpiredEventsBesideANonConsumingLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	set, err := spec.Compile([]spec.Source{{Name: "unsubscribed.yaml", Data: []byte(unsubscribedSpecs)}}, spec.Options{Builtins: builtin.Names()})
	require.NoError(t, err)
	count := func(q string) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, q).Scan(&n))
		return n
	}

	// The leader: an instance that does not consume (events.consume: false).
	leader, err := engine.New(engine.Config{
		Name: "leases", Owner: "leader", Pool: pool, Specs: set, NoEventConsumer: true,
		PollInterval: 100 * time.Millisecond, Logger: warnLogger(),
	})
	require.NoError(t, err)
	inproc.Go(t, leader.Run)
	require.Eventually(t, leader.IsLeader, 60*time.Second, 10*time.Millisecond, "the first instance did not lead")

	// unsettled counts the events a consumer still has to handle: due
	// PENDING ones and PROCESSING ones. An event nobody subscribes to is
	// settled once claimed (deleted, or held back until
	// events.unmatched_grace).
	const unsettled = `SELECT count(*) FROM tasks.events
WHERE status = 'PROCESSING' OR (status = 'PENDING' AND run_after <= now())`

	// A follower that consumes. A due PENDING event proves its consumer
	// ran once (nothing else consumes).
	_, err = pool.Exec(ctx, `
INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, status)
VALUES (tasks.uuid_v7(now()), now(), 'thing.happened', 'PLATFORM', 'system', 'PENDING')`)
	require.NoError(t, err)
	follower, err := engine.New(engine.Config{
		Name: "leases", Owner: "follower", Pool: pool, Specs: set,
		PollInterval: 100 * time.Millisecond, Logger: warnLogger(),
	})
	require.NoError(t, err)
	inproc.Go(t, follower.Run)
	require.Eventually(t, func() bool { return count(unsettled) == 0 },
		60*time.Second, 10*time.Millisecond, "the follower's consumer did not run")
	require.False(t, follower.IsLeader())

	// A consumer crashed holding an event: its lease has ended.
	_, err = pool.Exec(ctx, `
INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, status, owner_id, attempts, locked_until)
VALUES (tasks.uuid_v7(now()), now(), 'thing.happened', 'PLATFORM', 'system', 'PROCESSING', 'crashed', 1,
        now() - interval '1 hour')`)
	require.NoError(t, err)
	// The follower takes it back within its consumer's Interval (10 s) of
	// probes; a minute is generous.
	require.Eventually(t, func() bool { return count(unsettled) == 0 },
		60*time.Second, 50*time.Millisecond, "the crashed consumer's event stays PROCESSING")
}
