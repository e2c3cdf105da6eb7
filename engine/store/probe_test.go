package store_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestProbeReportsExpiredEventLeases: a follower's probe reports events due
// when a PROCESSING event's lease has ended (its consumer crashed), not only
// when a PENDING event is due: beside a leader that does not consume, the
// probe is the only thing that wakes a follower's consumer to take it back.
// A lease still running is no work. Each look-up reads its partial index,
// never a partition of the outbox sequentially.
func TestProbeReportsExpiredEventLeases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer conn.Release()
	defer conn.Exec(b.ctx, `SELECT pg_advisory_unlock_all()`) //nolint:errcheck
	st := store.New(conn.Conn())
	probe := func() store.Probe {
		t.Helper()
		p, err := st.TryLeadAndProbe(b.ctx, "probe-test", []string{"noop"})
		require.NoError(t, err)
		return p
	}
	insert := func(status, lockedUntil string) {
		t.Helper()
		_, err := b.pool.Exec(b.ctx, `
INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, status, owner_id, attempts, locked_until)
VALUES (tasks.uuid_v7(now()), now(), 'thing.happened', 'PLATFORM', 'system', $1, 'crashed', 1, now() + $2::interval)`,
			status, lockedUntil)
		require.NoError(t, err)
	}

	require.False(t, probe().EventsDue, "an empty outbox")
	insert("PROCESSING", "1 hour")
	require.False(t, probe().EventsDue, "a consumer holds its lease")
	insert("PROCESSING", "-1 hour")
	require.True(t, probe().EventsDue, "a lease ended: its event must be taken back")

	// The plan, beside a history of dead letters the look-ups must not read.
	_, err = b.pool.Exec(b.ctx, `
INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, status, attempts, dead_lettered_at)
SELECT tasks.uuid_v7(now()), now(), 'thing.happened', 'PLATFORM', 'system', 'DEAD_LETTER', 5, now()
FROM generate_series(1, 20000)`)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `ANALYZE tasks.events`)
	require.NoError(t, err)
	var part string // the partition that holds the rows (the others are empty)
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT tableoid::regclass::text FROM tasks.events LIMIT 1`).Scan(&part))
	part = strings.TrimPrefix(part, "tasks.")
	plan := dbtest.Explain(t, b.ctx, conn, "COSTS OFF", store.TryLeadAndProbeSQL(), "probe-test", []string{"noop"})
	require.NotContains(t, plan, "Seq Scan on "+part+" ", "the probe must read the outbox's partial indexes")
	require.Contains(t, plan, part+"_locked_until_idx", "the expired-lease look-up must read the index on PROCESSING leases")
}
