package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
)

// TestListPartitionsWhileOneIsDropped: a listing that reads a partition
// whose drop commits under it (the leader's retention, while another
// maintenance run lists) leaves that partition out and lists the others.
// It failed with "cannot scan NULL into *time.Time": PostgreSQL reads a
// dropped relation's bound as NULL, and one maintenance run so aborted
// another's retention, keeping a partition it should have dropped.
func TestListPartitionsWhileOneIsDropped(t *testing.T) {
	t.Parallel()
	b, before, gone := setupOldEventPartition(t)
	require.Contains(t, tables(before), gone)

	dropper, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = dropper.Rollback(b.ctx) }()
	_, err = dropper.Exec(b.ctx, "DROP TABLE "+gone)
	require.NoError(t, err)

	type result struct {
		parts []store.Partition
		err   error
	}
	done := make(chan result, 1)
	go func() {
		parts, err := b.store.ListPartitions(b.ctx, "tasks.events")
		done <- result{parts, err}
	}()
	awaitLockWait(t, b, "the listing waits for the dropped partition", "relation")
	require.NoError(t, dropper.Commit(b.ctx))

	select {
	case r := <-done:
		require.NoError(t, r.err)
		want := tables(before)
		want = want[1:] // the oldest, dropped
		require.Equal(t, gone, tables(before)[0])
		require.Equal(t, want, tables(r.parts))
	case <-time.After(time.Minute):
		t.Fatal("the listing did not return")
	}
}

// setupOldEventPartition is setup with an events partition six months old:
// it returns the bundle, the events partitions listed then and the old
// one's name.
func setupOldEventPartition(t *testing.T) (*bundle, []store.Partition, string) {
	t.Helper()
	b := setup(t)
	old := clock.Now().UTC().AddDate(0, -6, 0)
	_, err := b.store.EnsurePartitions(b.ctx, old, 1)
	require.NoError(t, err)
	parts, err := b.store.ListPartitions(b.ctx, "tasks.events")
	require.NoError(t, err)
	return b, parts, "tasks.events_p" + old.Format("2006_01")
}

// tables are the names of parts.
func tables(parts []store.Partition) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.Table
	}
	return out
}

// awaitLockWait waits until a session of b's database waits for a lock of
// one of locktypes (pg_locks is the cluster's: only this test's database
// is looked at).
func awaitLockWait(t *testing.T, b *bundle, why string, locktypes ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = ANY ($1)
               AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database()))`, locktypes).Scan(&waiting))
		return waiting
	}, time.Minute, time.Millisecond, why)
}

// TestDropPartitionDroppedWhileItWaits: a retention drop that finds its
// partition, then waits for the parent's lock while another maintenance run
// drops that partition (the leader's retention beside a wf maintenance run),
// reports that it dropped nothing instead of failing. It failed with
// 'table "events_p…" does not exist': the name was resolved before the
// lock, and the run that failed so abandoned the rest of its retention.
func TestDropPartitionDroppedWhileItWaits(t *testing.T) {
	t.Parallel()
	b, parts, gone := setupOldEventPartition(t)
	require.Equal(t, gone, parts[0].Table)

	// The other run's drop, under the parent's lock as dropPartition takes it.
	dropper, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = dropper.Rollback(b.ctx) }()
	_, err = dropper.Exec(b.ctx, "LOCK TABLE ONLY tasks.events IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	_, err = dropper.Exec(b.ctx, "DROP TABLE "+gone)
	require.NoError(t, err)

	type result struct {
		dropped bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		dropped, err := b.store.DropEventPartition(b.ctx, parts[0],
			store.EventCutoffs{DeadLetter: clock.Now()}, time.Minute)
		done <- result{dropped, err}
	}()
	// pg_locks is the cluster's: only this test's database is looked at.
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = 'relation'
               AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database()))`).Scan(&waiting))
		return waiting
	}, time.Minute, time.Millisecond, "the drop waits for the parent's lock")
	require.NoError(t, dropper.Commit(b.ctx))

	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.False(t, r.dropped, "the partition was dropped by the other run")
	case <-time.After(time.Minute):
		t.Fatal("the drop did not return")
	}
	after, err := b.store.ListPartitions(b.ctx, "tasks.events")
	require.NoError(t, err)
	require.Equal(t, tables(parts[1:]), tables(after))
}

// TestSeedsEnsureThePartitionsOfTheirRows: the overview seed and the
// history insert write on any date, because each ensures the partitions of
// the rows it writes. The overview's dead letters reach 41.7 days back; on
// the 7th of a month that is two months back, which a seed ensuring "the
// last 32 days" missed ("no partition of relation tasks found for row").
// Each date is a month no partition exists for yet.
func TestSeedsEnsureThePartitionsOfTheirRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, at := range []time.Time{
		time.Date(2031, 3, 7, 12, 0, 0, 0, time.UTC),
		time.Date(2031, 7, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2032, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Date(2032, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
	} {
		require.NoError(t, b.store.SeedOverviewTasks(b.ctx, "DEAD_LETTER", 1000, time.Hour, at), at)
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT count(*) FROM tasks.tasks
WHERE status = 'DEAD_LETTER' AND "timestamp" >= $1::timestamptz - interval '1000 hours' AND "timestamp" < $1`, at).Scan(&n))
		require.Equal(t, 1000, n, at)
	}
	from := time.Date(2034, 1, 31, 23, 0, 0, 0, time.UTC)
	require.NoError(t, b.store.InsertFinishedTasks(b.ctx, "history", from, from.AddDate(0, 3, 0), 500))
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'history'`).Scan(&n))
	require.Equal(t, 500, n)
}
