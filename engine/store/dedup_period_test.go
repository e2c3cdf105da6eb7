package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// periodTask is a noop task under key, created at at, whose key is held
// for period, and after it ended in one of keep.
func periodTask(key string, at time.Time, period time.Duration, keep ...wftype.TaskStatus) store.NewTask {
	nt := keyedTask(key, at)
	nt.UniqueFor, nt.UniqueStates = period, keep
	return nt
}

// insertPeriod inserts one task and returns its result.
func (b *bundle) insertPeriod(t *testing.T, nt store.NewTask) store.InsertResult {
	t.Helper()
	res, err := b.store.InsertTasks(b.ctx, []store.NewTask{nt})
	require.NoError(t, err)
	return res[0]
}

// setupSpan is setup with the partitions from t0 to t0+span in place.
func setupSpan(t *testing.T, t0 time.Time, span time.Duration) *bundle {
	t.Helper()
	b := setup(t)
	_, err := b.store.EnsurePartitionsSpan(b.ctx, t0, t0.Add(span))
	require.NoError(t, err)
	return b
}

// finishAll claims every due noop task and ends each with status.
func (b *bundle) finishAll(t *testing.T, status wftype.TaskStatus) int {
	t.Helper()
	claimed := claimAll(t, b, "noop", 1000)
	for _, c := range claimed {
		b.finishOne(t, "w1", store.Finish{ID: c.ID, Status: status})
	}
	return len(claimed)
}

// TestUniquePeriodKeepsFinishedKey: a key held for an hour answers an
// enqueue 40 minutes later, in the next month's partition, with the
// COMPLETED task; an enqueue at the end of the hour creates a task; a
// task that ended in a status not kept frees its key at once.
func TestUniquePeriodKeepsFinishedKey(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2031, 3, 31, 23, 40, 0, 0, time.UTC)
	b := setupSpan(t, t0, 3*time.Hour)

	first := b.insertPeriod(t, periodTask("p", t0, time.Hour, wftype.StatusCompleted))
	require.False(t, first.Duplicate)
	require.Equal(t, 1, b.finishAll(t, wftype.StatusCompleted))

	// Within the hour, across the month boundary: the finished task.
	dup := b.insertPeriod(t, periodTask("p", t0.Add(40*time.Minute), time.Hour, wftype.StatusCompleted))
	require.True(t, dup.Duplicate)
	require.Equal(t, first.Task.ID, dup.Task.ID)
	require.Equal(t, wftype.StatusCompleted, dup.Task.Status)
	live, err := b.store.LiveTaskByDedupKey(b.ctx, wftype.SystemSchema, "p", t0.Add(59*time.Minute))
	require.NoError(t, err)
	require.NotNil(t, live)
	require.Equal(t, first.Task.ID, live.ID)
	gone, err := b.store.LiveTaskByDedupKey(b.ctx, wftype.SystemSchema, "p", t0.Add(time.Hour))
	require.NoError(t, err)
	require.Nil(t, gone, "the period is over at t0+1h")

	// At the end of the hour the key is free: a task of its own, whose
	// period starts then.
	second := b.insertPeriod(t, periodTask("p", t0.Add(time.Hour), time.Hour, wftype.StatusCompleted))
	require.False(t, second.Duplicate)
	require.NotEqual(t, first.Task.ID, second.Task.ID)
	hold, err := b.store.DedupKeyHold(b.ctx, wftype.SystemSchema, "p")
	require.NoError(t, err)
	require.Equal(t, [16]byte(second.Task.ID), hold.TaskID)
	require.False(t, hold.Ended)
	require.Equal(t, t0.Add(2*time.Hour), *hold.ExpiresAt)

	// FAILED is not kept: the key is free as the task fails.
	require.Equal(t, 1, b.finishAll(t, wftype.StatusFailed))
	hold, err = b.store.DedupKeyHold(b.ctx, wftype.SystemSchema, "p")
	require.NoError(t, err)
	require.Nil(t, hold)
	third := b.insertPeriod(t, periodTask("p", t0.Add(61*time.Minute), time.Hour, wftype.StatusCompleted))
	require.False(t, third.Duplicate)
	require.Equal(t, 3, countKey(t, b, "p"))

	// A live task holds its key past its period.
	late := b.insertPeriod(t, periodTask("p", t0.Add(3*time.Hour), time.Hour, wftype.StatusCompleted))
	require.True(t, late.Duplicate)
	require.Equal(t, third.Task.ID, late.Task.ID)
}

// TestUniquePeriodTenantsAndPlainKeys: a period key is per tenant, and a
// task without a period takes over a stale key too.
func TestUniquePeriodTenantsAndPlainKeys(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2031, 6, 10, 12, 0, 0, 0, time.UTC)
	b := setupSpan(t, t0, 2*time.Hour)

	a := b.insertPeriod(t, periodTask("k", t0, time.Hour, wftype.StatusCompleted))
	other := periodTask("k", t0.Add(time.Minute), time.Hour, wftype.StatusCompleted)
	other.SchemaName = "s_other"
	o := b.insertPeriod(t, other)
	require.False(t, o.Duplicate, "another tenant's key is its own")
	require.Equal(t, 2, b.finishAll(t, wftype.StatusCompleted))

	plain := b.insertPeriod(t, keyedTask("k", t0.Add(30*time.Minute)))
	require.True(t, plain.Duplicate)
	require.Equal(t, a.Task.ID, plain.Task.ID)
	plain = b.insertPeriod(t, keyedTask("k", t0.Add(90*time.Minute)))
	require.False(t, plain.Duplicate)
	// Without a period the key is freed when the task ends.
	require.Equal(t, 1, b.finishAll(t, wftype.StatusCompleted))
	hold, err := b.store.DedupKeyHold(b.ctx, wftype.SystemSchema, "k")
	require.NoError(t, err)
	require.Nil(t, hold)
}

// TestUniquePeriodRace: 100 clients enqueue five keys in three periods
// (batches of one to three tasks, some with a key twice), while the
// holders of the past period are pruned; each key gets exactly one task
// per period.
func TestUniquePeriodRace(t *testing.T) {
	t.Parallel()
	const clients, keys, periods = 100, 5, 3
	period := time.Hour
	t0 := time.Date(2031, 8, 31, 22, 0, 0, 0, time.UTC) // the periods straddle a month boundary
	b := setupSpan(t, t0, 2*periods*period)

	for p := range periods {
		// Each period starts two periods after the last one did: the
		// winner of a period may be its latest task (up to half a period
		// in), whose key is held a period from then.
		start := t0.Add(time.Duration(2*p) * period)
		var wg sync.WaitGroup
		errs := make([]error, clients+1)
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var batch []store.NewTask
				for j := range 1 + c%3 {
					at := start.Add(time.Duration((c*7+j)%1800) * time.Second)
					batch = append(batch, periodTask(fmt.Sprintf("race-%d", (c+j/2)%keys), at, period, wftype.StatusCompleted))
				}
				_, errs[c] = store.InsertSettled(b.ctx, batch, b.store.InsertTasks,
					func(r store.InsertResult) bool { return r.Released }, func(store.NewTask) string { return "task" })
			}()
		}
		wg.Add(1)
		go func() { // the leader's maintenance, pruning at once
			defer wg.Done()
			_, errs[clients] = b.store.DeleteStaleDedupKeys(b.ctx, start.Add(period/2), 100)
		}()
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, keys, b.finishAll(t, wftype.StatusCompleted))
	}
	for k := range keys {
		rows, err := b.pool.Query(b.ctx, `SELECT "timestamp" FROM tasks.tasks WHERE dedup_key = $1 ORDER BY "timestamp"`, fmt.Sprintf("race-%d", k))
		require.NoError(t, err)
		var per [periods]int
		for rows.Next() {
			var ts time.Time
			require.NoError(t, rows.Scan(&ts))
			per[int(ts.Sub(t0)/(2*period))]++
		}
		require.NoError(t, rows.Err())
		require.Equal(t, [periods]int{1, 1, 1}, per, "key race-%d: tasks per period", k)
	}
}

// TestUniquePeriodPruneAndRequeue: maintenance deletes only the rows of
// ended tasks whose period is over; a requeued task takes its own kept
// key back, and one whose key another task holds is refused.
func TestUniquePeriodPruneAndRequeue(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2031, 9, 15, 8, 0, 0, 0, time.UTC)
	b := setupSpan(t, t0, 3*time.Hour)

	kept := b.insertPeriod(t, periodTask("kept", t0, time.Hour, wftype.StatusCompleted, wftype.StatusDeadLetter))
	require.Equal(t, 1, b.finishAll(t, wftype.StatusDeadLetter))
	stale := b.insertPeriod(t, periodTask("stale", t0, time.Minute, wftype.StatusFailed))
	live := b.insertPeriod(t, periodTask("live", t0, time.Minute, wftype.StatusFailed))
	require.Equal(t, 2, b.finishAll(t, wftype.StatusFailed))
	_ = b.insertPeriod(t, periodTask("live", t0.Add(2*time.Minute), time.Minute, wftype.StatusFailed)) // takes "live" over, PENDING

	n, err := b.store.DeleteStaleDedupKeys(b.ctx, t0.Add(30*time.Minute), 100)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "only the ended, expired key")
	for key, want := range map[string]bool{"kept": true, "stale": false, "live": true} {
		hold, err := b.store.DedupKeyHold(b.ctx, wftype.SystemSchema, key)
		require.NoError(t, err)
		require.Equal(t, want, hold != nil, key)
	}

	// The kept task requeued takes its own key back, live again.
	_, err = b.store.RequeueTask(b.ctx, kept.Task.ID)
	require.NoError(t, err)
	hold, err := b.store.DedupKeyHold(b.ctx, wftype.SystemSchema, "kept")
	require.NoError(t, err)
	require.False(t, hold.Ended)
	require.Equal(t, [16]byte(kept.Task.ID), hold.TaskID)

	// "live"'s first task, requeued, finds its key held by the new one.
	_, err = b.store.RequeueTask(b.ctx, live.Task.ID)
	require.ErrorIs(t, err, wftype.ErrConflict)
	// "stale"'s, whose key was pruned, takes it again.
	_, err = b.store.RequeueTask(b.ctx, stale.Task.ID)
	require.NoError(t, err)

	// A deleted task frees its key, whatever its status.
	_, err = b.pool.Exec(b.ctx, `DELETE FROM tasks.tasks WHERE task_id = $1`, uuid.UUID(kept.Task.ID))
	require.NoError(t, err)
	hold, err = b.store.DedupKeyHold(b.ctx, wftype.SystemSchema, "kept")
	require.NoError(t, err)
	require.Nil(t, hold)
}

// TestUniquePeriodCopy: a batch large enough to go through COPY keeps and
// takes over period keys as the statement does.
func TestUniquePeriodCopy(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2031, 10, 31, 23, 30, 0, 0, time.UTC)
	b := setupSpan(t, t0, 2*time.Hour)
	batch := func(at time.Time) []store.NewTask {
		out := make([]store.NewTask, 600)
		for i := range out {
			out[i] = periodTask(fmt.Sprintf("copy-%d", i%3), at.Add(time.Duration(i)*time.Millisecond), time.Hour, wftype.StatusCompleted)
		}
		return out
	}
	inserted := func(res []store.InsertResult) int {
		n := 0
		for _, r := range res {
			if !r.Duplicate {
				require.False(t, r.Released)
				n++
			}
		}
		return n
	}
	res, err := b.store.InsertTasks(b.ctx, batch(t0))
	require.NoError(t, err)
	require.Equal(t, 3, inserted(res))
	require.Equal(t, 3, b.finishAll(t, wftype.StatusCompleted))
	res, err = b.store.InsertTasks(b.ctx, batch(t0.Add(30*time.Minute)))
	require.NoError(t, err)
	require.Zero(t, inserted(res), "within the period, across the month boundary")
	require.Equal(t, wftype.StatusCompleted, res[0].Task.Status)
	res, err = b.store.InsertTasks(b.ctx, batch(t0.Add(time.Hour)))
	require.NoError(t, err)
	require.Equal(t, 3, inserted(res), "the period is over: one task per key")
	for k := range 3 {
		require.Equal(t, 2, countKey(t, b, fmt.Sprintf("copy-%d", k)))
	}
}

// TestStaleDedupKeysPlan: with 200,000 keys held (live, or ended within
// their period), maintenance's delete of stale keys reads the partial
// index on ended keys, not the table.
func TestStaleDedupKeysPlan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Date(2031, 5, 5, 12, 0, 0, 0, time.UTC)
	_, err := b.pool.Exec(b.ctx, `
INSERT INTO tasks.task_dedup (schema_name, dedup_key, task_id, task_timestamp, expires_at, keep_states, ended_at)
SELECT 'system', 'k' || i, gen_random_uuid(), $1::timestamptz, $1::timestamptz + interval '1 hour', '{COMPLETED}',
       CASE WHEN i % 2 = 0 THEN $1::timestamptz END
FROM generate_series(1, 200000) i`, now)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `ANALYZE tasks.task_dedup`)
	require.NoError(t, err)
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx) //nolint:errcheck
	plan := explainAnalyze(t, b, tx, store.DeleteStaleDedupKeysSQL(), now.Add(30*time.Minute), 100)
	require.Contains(t, plan, "task_dedup_ended_expiry_idx")
	require.NotContains(t, plan, "Seq Scan on task_dedup")
}
