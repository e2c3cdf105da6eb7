package maintenance_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

const day = 24 * time.Hour

type bundle struct {
	ctx   context.Context
	store *store.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{ctx: context.Background(), store: dbtest.NewStore(t)}
}

func (b *bundle) supervisor(t *testing.T, tweak func(*maintenance.Config)) *maintenance.Supervisor {
	t.Helper()
	cfg := maintenance.Config{Store: b.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := maintenance.New(cfg)
	require.NoError(t, err)
	return s
}

// ensurePartitions creates the month partitions of n months from the month of from.
func (b *bundle) ensurePartitions(t *testing.T, from time.Time, n int) {
	t.Helper()
	_, err := b.store.EnsurePartitions(b.ctx, from, n)
	require.NoError(t, err)
}

func (b *bundle) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	_, err := b.store.DB().Exec(b.ctx, q, args...)
	require.NoError(t, err)
}

func (b *bundle) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.DB().QueryRow(b.ctx, q, args...).Scan(&n))
	return n
}

// addTasks inserts n tasks of a status per day for the days given, created
// d days (and up to n seconds) before now, finished an hour after creation.
func (b *bundle) addTasks(t *testing.T, now time.Time, status string, days []int, n int, dedupPrefix string) {
	t.Helper()
	b.exec(t, `
WITH rows AS (
    SELECT date_trunc('milliseconds', $1::timestamptz - d * interval '1 day' - k * interval '1 second') AS ts, d, k
    FROM unnest($2::int[]) d, generate_series(1, $4) k
),
ins AS (
    INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, dedup_key, finished_at)
    SELECT tasks.uuid_v7(ts), ts, 'system', 'SYSTEM', 'ASYNCHRONOUS', 'noop', $3::text,
           CASE WHEN $5::text <> '' THEN $5::text || d || ':' || k END,
           CASE WHEN $3::text NOT IN ('PENDING', 'ACTIVE') THEN ts + interval '1 hour' END
    FROM rows
    RETURNING task_id, "timestamp", schema_name, dedup_key
)
INSERT INTO tasks.task_dedup (schema_name, dedup_key, task_id, task_timestamp)
SELECT schema_name, dedup_key, task_id, "timestamp" FROM ins WHERE dedup_key IS NOT NULL`, now, days, status, n, dedupPrefix)
}

// addEvents inserts n events of a status per day, dead letters dead-lettered
// an hour after creation.
func (b *bundle) addEvents(t *testing.T, now time.Time, status string, days []int, n int) {
	t.Helper()
	b.exec(t, `
INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, status, dead_lettered_at)
SELECT tasks.uuid_v7(ts), ts, 'catalog.deleted', 'CATALOG', 's', $3::text,
       CASE WHEN $3::text = 'DEAD_LETTER' THEN ts + interval '1 hour' END
FROM unnest($2::int[]) d, generate_series(1, $4) k,
     LATERAL (SELECT date_trunc('milliseconds', $1::timestamptz - d * interval '1 day' - k * interval '1 second') AS ts) x`,
		now, days, status, n)
}

func daysUpTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func daysWhere(keep func(d int) bool) int {
	n := 0
	for d := range 100 {
		if keep(d) {
			n++
		}
	}
	return n
}

func (b *bundle) partitions(t *testing.T, parent string) []string {
	t.Helper()
	parts, err := b.store.ListPartitions(b.ctx, parent)
	require.NoError(t, err)
	var names []string
	for _, p := range parts {
		names = append(names, strings.TrimPrefix(p.Table, "tasks."))
	}
	return names
}

// TestRetentionOverHundredDays fills 100 simulated days of partitions with
// tasks and events of every status, runs maintenance, and checks that
// exactly the expected rows survive: every PENDING/ACTIVE task and
// PENDING/PROCESSING event whatever its age, finished tasks inside their
// window, dead letters inside theirs. Partitions holding nothing to keep are
// dropped whole, and the claim path does not scan any partition afterwards.
func TestRetentionOverHundredDays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Days 0..99 run from 2031-01-25 to 2031-05-05: partitions Jan..May.
	now := time.Date(2031, 5, 5, 12, 0, 0, 0, time.UTC)
	b.ensurePartitions(t, now.Add(-100*day), 5)

	const perDay, bulk = 40, 1000
	all := daysUpTo(100)
	for _, st := range []string{"COMPLETED", "FAILED", "CANCELLED", "DEAD_LETTER"} {
		b.addTasks(t, now, st, all, perDay, "")
	}
	// Volume, so the planner's choices are those of a real table.
	b.exec(t, `
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, finished_at)
SELECT tasks.uuid_v7(ts), ts, 'system', 'SYSTEM', 'ASYNCHRONOUS', 'other', 'COMPLETED', ts + interval '1 hour'
FROM generate_series(0, 99) d, generate_series(1, $2::int) k,
     LATERAL (SELECT date_trunc('milliseconds', $1::timestamptz - d * interval '1 day' - k * interval '50 ms') AS ts) x`, now, bulk)
	// Live tasks old and new, holding dedup keys: old PENDING (day 92, in
	// February, older than every window), old ACTIVE (day 85), recent PENDING.
	b.addTasks(t, now, "PENDING", []int{92, 0}, 3, "live-p:")
	b.addTasks(t, now, "ACTIVE", []int{85}, 2, "live-a:")
	// A stale dedup key pointing into January (a partition to be dropped).
	b.exec(t, `INSERT INTO tasks.task_dedup (dedup_key, task_id, task_timestamp, schema_name) VALUES ('stale', tasks.uuid_v7($1), $1, 'system')`, now.Add(-97*day))

	b.addEvents(t, now, "DEAD_LETTER", all, 10)
	b.addEvents(t, now, "PENDING", []int{70, 0}, 2)
	b.addEvents(t, now, "PROCESSING", []int{50}, 1)

	sup := b.supervisor(t, nil)
	start := time.Now()
	res, err := sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	t.Logf("retention in %v: %+v", time.Since(start), res)

	// Tasks: finished ones inside their window, every live one.
	within := func(days int) int { return perDay * daysWhere(func(d int) bool { return d <= days }) }
	require.Equal(t, bulk*daysWhere(func(d int) bool { return d <= 30 }),
		b.count(t, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'other'`))
	for st, want := range map[string]int{
		"COMPLETED": within(30) + bulk*daysWhere(func(d int) bool { return d <= 30 }), "FAILED": within(30), "CANCELLED": within(30), "DEAD_LETTER": within(90),
		"PENDING": 6, "ACTIVE": 2,
	} {
		require.Equal(t, want, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE status = $1`, st), st)
	}
	require.Equal(t, 4*perDay*100-3*within(30)-within(90)+bulk*(100-31), res.TasksDeleted+(perDay*4+bulk)*6,
		"every expired row was deleted, January's with its partition")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM tasks.tasks WHERE status NOT IN ('PENDING','ACTIVE') AND finished_at < $1 AND status <> 'DEAD_LETTER'`, now.Add(-30*day)))
	// Dedup keys: the live tasks keep theirs, the stale one is gone.
	require.Equal(t, 8, b.count(t, `SELECT count(*) FROM tasks.task_dedup`))
	require.Equal(t, 8, b.count(t, `
SELECT count(*) FROM tasks.task_dedup d JOIN tasks.tasks t ON t.task_id = d.task_id AND t."timestamp" = d.task_timestamp
WHERE t.status IN ('PENDING', 'ACTIVE')`))

	// Events: dead letters inside 30 days, every PENDING/PROCESSING one.
	require.Equal(t, 10*daysWhere(func(d int) bool { return d <= 30 }),
		b.count(t, `SELECT count(*) FROM tasks.events WHERE status = 'DEAD_LETTER'`))
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM tasks.events WHERE status = 'PENDING'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.events WHERE status = 'PROCESSING'`))

	// January held nothing to keep in either table: dropped. February and
	// March events held one live event each among expired dead letters: kept.
	tasksParts, eventParts := b.partitions(t, "tasks.tasks"), b.partitions(t, "tasks.events")
	require.NotContains(t, tasksParts, "tasks_p2031_01")
	require.Subset(t, tasksParts, []string{"tasks_p2031_02", "tasks_p2031_03", "tasks_p2031_04", "tasks_p2031_05",
		"tasks_p2031_06", "tasks_p2031_07", "tasks_p2031_08"})
	require.NotContains(t, eventParts, "events_p2031_01")
	require.Subset(t, eventParts, []string{"events_p2031_02", "events_p2031_03", "events_p2031_04", "events_p2031_05"})
	require.Contains(t, res.Dropped, "tasks.tasks_p2031_01")
	require.Contains(t, res.Dropped, "tasks.events_p2031_01")
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM tasks.events_p2031_02`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.events_p2031_03`))
	// Nothing before the current month except what must stay.
	for _, p := range tasksParts {
		if p < "tasks_p2031_01" {
			t.Errorf("old empty partition %s kept", p)
		}
	}

	// A second run has nothing left to do.
	again, err := sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.Equal(t, maintenance.Result{}, again)

	// The claim path reads the partial index, never a partition of finished rows.
	b.exec(t, `ANALYZE tasks.tasks`)
	plan := dbtest.Explain(t, b.ctx, b.store.DB(), "COSTS OFF", store.ClaimSQL(),
		[]string{"ASYNCHRONOUS"}, []string{"noop"}, []int32{100}, []float64{60}, 100, now, "w1")
	for _, p := range tasksParts {
		finished := b.count(t, fmt.Sprintf(`SELECT count(*) FROM tasks.%s WHERE status NOT IN ('PENDING', 'ACTIVE')`, p))
		if finished > 0 {
			require.NotContains(t, plan, "Seq Scan on "+p+" ", "the claim must not scan %s (%d finished rows)", p, finished)
		}
	}
}

// TestPartitionWithLoneLiveTask: a past month whose only survivor is one old
// PENDING task is trimmed, not dropped; once the task finished and aged out
// of its window, the partition is dropped.
func TestPartitionWithLoneLiveTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Date(2032, 3, 15, 12, 0, 0, 0, time.UTC)
	b.ensurePartitions(t, now.AddDate(0, -2, 0), 3)
	january := []int{55, 56, 57, 58, 59, 60} // 2032-01-15 .. 2032-01-20
	b.addTasks(t, now, "COMPLETED", january, 50, "")
	b.addTasks(t, now, "DEAD_LETTER", january, 50, "")
	b.addTasks(t, now, "PENDING", []int{58}, 1, "lone:")
	sup := b.supervisor(t, func(c *maintenance.Config) {
		c.BatchSize = 7 // many batches
		c.Retention.DeadLetter = 40 * day
	})

	res, err := sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.NotContains(t, res.Dropped, "tasks.tasks_p2032_01")
	require.Equal(t, 600, res.TasksDeleted)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.tasks_p2032_01`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.task_dedup`))

	// The task completes (its dedup key goes with the trigger)…
	b.exec(t, `UPDATE tasks.tasks SET status = 'COMPLETED', finished_at = $1 WHERE status = 'PENDING'`, now)
	require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.task_dedup`))
	// …and is still inside its window a week later,
	res, err = sup.RunOnce(b.ctx, now.Add(7*day))
	require.NoError(t, err)
	require.NotContains(t, res.Dropped, "tasks.tasks_p2032_01")
	// but not a month later: the whole partition goes.
	res, err = sup.RunOnce(b.ctx, now.Add(31*day))
	require.NoError(t, err)
	require.Contains(t, res.Dropped, "tasks.tasks_p2032_01")
	require.NotContains(t, b.partitions(t, "tasks.tasks"), "tasks_p2032_01")
	// The current month (April) and those ahead were created, never dropped.
	require.Subset(t, b.partitions(t, "tasks.tasks"), []string{"tasks_p2032_04", "tasks_p2032_05", "tasks_p2032_06", "tasks_p2032_07"})
}

// TestBusyTableDefersDrop: when a long transaction holds the table, the drop
// gives up after its lock timeout, changes nothing, and happens at the next
// run.
func TestBusyTableDefersDrop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Date(2033, 6, 10, 0, 0, 0, 0, time.UTC)
	b.ensurePartitions(t, now.AddDate(0, -3, 0), 4)
	b.addTasks(t, now, "COMPLETED", []int{80}, 5, "")
	sup := b.supervisor(t, func(c *maintenance.Config) { c.LockTimeout = 100 * time.Millisecond })

	tx, err := b.store.DB().Begin(b.ctx)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `SELECT count(*) FROM tasks.tasks`)
	require.NoError(t, err)
	res, err := sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.Contains(t, res.Deferred, "tasks.tasks_p2033_03")
	require.True(t, slices.Contains(res.Dropped, "tasks.events_p2033_03"), "the events table was not busy: %v", res.Dropped)
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM tasks.tasks`))
	require.NoError(t, tx.Rollback(b.ctx))

	res, err = sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.Contains(t, res.Dropped, "tasks.tasks_p2033_03")
	require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.tasks`))
}

// TestInboxRetention forgets the ids of pushed messages older than
// InboxWindow (in batches) and keeps the younger ones, whose redelivery must
// still write nothing.
func TestInboxRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := clock.Now()
	b.exec(t, `
INSERT INTO tasks.inbox_messages (source, message_id, event_id, received_at)
SELECT 'gcs', 'm' || k, gen_random_uuid(), $1::timestamptz - $2::interval - k * interval '1 second'
FROM generate_series(1, 25) k`, now, maintenance.InboxWindow.String())
	b.exec(t, `
INSERT INTO tasks.inbox_messages (source, message_id, event_id, received_at)
SELECT 'gcs', 'young' || k, gen_random_uuid(), $1::timestamptz - $2::interval + k * interval '1 second'
FROM generate_series(1, 5) k`, now, maintenance.InboxWindow.String())
	res, err := b.supervisor(t, func(c *maintenance.Config) { c.BatchSize = 10 }).RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.EqualValues(t, 25, res.InboxDeleted)
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM tasks.inbox_messages WHERE message_id LIKE 'young%'`))
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM tasks.inbox_messages`))
}
