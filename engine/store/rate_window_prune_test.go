package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
)

// TestPruneRateWindowsKeepsARowRewrittenMeanwhile: a row that the prune read
// as over, and that a claim rewrote to the current window before the prune
// deleted it, stays. The prune's type lock keeps claims and prunes of a
// type apart, but a claim may commit between the prune's read and its lock;
// here a writer that takes no lock holds the row, so the prune waits on it
// and then finds the rewritten row. Deleted, it would lift the limit: the
// next claim would find no row and begin the window afresh.
func TestPruneRateWindowsKeepsARowRewrittenMeanwhile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := clock.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	_, err := b.pool.Exec(b.ctx, `
INSERT INTO tasks.rate_windows (task_type, schema_name, window_start, window_seconds, starts)
VALUES ('noop', 'ta', $1, 60, 5), ('noop', 'tb', $1, 60, 5)`, w)
	require.NoError(t, err)

	current := w.Add(3 * time.Hour)
	writer, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = writer.Rollback(b.ctx) }()
	_, err = writer.Exec(b.ctx, `
UPDATE tasks.rate_windows SET window_start = $1, starts = 1 WHERE schema_name = 'ta'`, current)
	require.NoError(t, err)

	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	now := current.Add(time.Minute)
	go func() {
		n, err := b.store.PruneRateWindows(b.ctx, &now, 10)
		done <- result{n, err}
	}()
	awaitLockWait(t, b, "the prune waits for the writer's row", "transactionid", "tuple")
	require.NoError(t, writer.Commit(b.ctx))

	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.EqualValues(t, 1, r.n, "tb's row, over")
	case <-time.After(time.Minute):
		t.Fatal("the prune did not return")
	}
	var start time.Time
	var starts int
	require.NoError(t, b.pool.QueryRow(b.ctx,
		`SELECT window_start, starts FROM tasks.rate_windows WHERE task_type = 'noop' AND schema_name = 'ta'`).Scan(&start, &starts))
	require.True(t, current.Equal(start), "%s", start)
	require.Equal(t, 1, starts)
}
