package workflow_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/dbtest"
)

// TestThousandsOfWaitingRunsCostNothing: an engine (the leader, with its
// wait pass each poll interval of 100 ms) sends as many statements in a
// window of wall time with 10,000 sleeping and 10,000 event-waiting runs
// as with none: nothing reads the waiting steps one by one. The counts are
// of statements (the pool's tracer), not of time; on a busy machine both
// windows shrink alike. The runs are written by hand (two statements), as
// Start would leave them, and none of them is touched.
func TestThousandsOfWaitingRunsCostNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 20,000 runs")
	}
	t.Parallel()
	url := dbtest.NewDatabase(t)
	log := &dbtest.StatementLog{}
	pool := dbtest.PoolWith(t, url, func(c *pgxpool.Config) { c.ConnConfig.Tracer = log })
	other := dbtest.PoolFor(t, url) // writes the runs, uncounted
	set, err := spec.Compile([]spec.Source{{Name: "waits.yaml", Data: []byte(waitSpecs)}}, spec.Options{Builtins: testBuiltins})
	require.NoError(t, err)
	e, err := engine.New(engine.Config{Name: "wf-" + uuid.NewString()[:8], Pool: pool, Specs: set, Registry: (&handlers{}).registry(),
		PollInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	runEngine(t, e)
	require.Eventually(t, e.IsLeader, 90*time.Second, 20*time.Millisecond)

	const window = 3 * time.Second
	measure := func() (all, waits int) {
		time.Sleep(time.Second) // wall time: let the engine settle after a change
		log.Take()
		time.Sleep(window) // wall time: the window the statements are counted over
		for _, q := range log.Take() {
			all++
			if strings.Contains(q, "workflow_deliveries") {
				waits++
			}
		}
		return all, waits
	}
	baseAll, baseWaits := measure()

	ctx := context.Background()
	_, err = other.Exec(ctx, `
INSERT INTO tasks.workflow_runs (run_id, workflow, schema_name, status, inputs, created_at, deadline)
SELECT gen_random_uuid(), 'order', 'system', 'RUNNING', jsonb_build_object('order_id', i::text), now(), now() + interval '3 days'
FROM generate_series(1, 20000) i`)
	require.NoError(t, err)
	_, err = other.Exec(ctx, `
INSERT INTO tasks.workflow_steps (run_id, step, status, updated_at, wake_at, wait_event)
SELECT run_id, CASE WHEN n <= 10000 THEN 'cool_down' ELSE 'paid' END, 'RUNNING', now(),
       now() + interval '1 hour' + n * interval '1 second',
       CASE WHEN n > 10000 THEN 'order.paid' END
FROM (SELECT run_id, row_number() OVER (ORDER BY run_id) AS n FROM tasks.workflow_runs) r`)
	require.NoError(t, err)
	_, err = other.Exec(ctx, `ANALYZE tasks.workflow_steps; ANALYZE tasks.workflow_runs`)
	require.NoError(t, err)

	heldAll, heldWaits := measure()
	t.Logf("statements in %s: %d with no waiting run (%d of the wait pass), %d with 20,000 (%d of the wait pass)",
		window, baseAll, baseWaits, heldAll, heldWaits)
	require.Positive(t, heldWaits, "the wait pass ran")
	require.LessOrEqual(t, heldAll, 2*baseAll+100, "idle statements grew with the waiting runs")
	require.LessOrEqual(t, heldWaits, 2*baseWaits+40, "the wait pass's statements grew with the waiting runs")
	var moved int
	require.NoError(t, other.QueryRow(ctx, `SELECT count(*) FROM tasks.workflow_steps WHERE status <> 'RUNNING'`).Scan(&moved))
	require.Zero(t, moved)
}
