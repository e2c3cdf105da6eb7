package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

type bundle struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	store *store.Store
	// finished names the partitions insertFinishedTasks filled.
	finished []string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool := dbtest.NewPool(t)
	return &bundle{ctx: context.Background(), pool: pool, store: store.New(pool)}
}

func newTask(taskType string) store.NewTask {
	return store.NewTask{
		SchemaName: wftype.SystemSchema, Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync,
		TaskType: taskType, Inputs: json.RawMessage(`{"n":1}`), MaxRetries: 3,
	}
}

// insertOne inserts one task of taskType and returns its id.
func (b *bundle) insertOne(t *testing.T, taskType string) uuid.UUID {
	t.Helper()
	res, err := b.store.InsertTasks(b.ctx, []store.NewTask{newTask(taskType)})
	require.NoError(t, err)
	return res[0].Task.ID
}

func TestIDTimeRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 31, 23, 59, 59, 999_000_000, time.UTC)
	id, err := store.NewIDAt(at)
	require.NoError(t, err)
	require.True(t, store.IsV7(id))
	require.Equal(t, at, store.IDTime(id))
	id2, ts, err := store.NewID()
	require.NoError(t, err)
	require.Equal(t, ts, store.IDTime(id2))
}

func TestInsertGetAndDedup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newTask("noop")
	a.DedupKey = "k1"
	res, err := b.store.InsertTasks(b.ctx, []store.NewTask{a, newTask("noop")})
	require.NoError(t, err)
	require.Len(t, res, 2)
	require.False(t, res[0].Duplicate)
	require.Equal(t, wftype.StatusPending, res[0].Task.Status)
	require.Equal(t, store.IDTime(res[0].Task.ID), res[0].Task.Timestamp)

	got, err := b.store.GetTask(b.ctx, res[0].Task.ID)
	require.NoError(t, err)
	require.Equal(t, "k1", *got.DedupKey)
	require.JSONEq(t, `{"n":1}`, string(got.Inputs))

	again := newTask("noop")
	again.DedupKey = "k1"
	res2, err := b.store.InsertTasks(b.ctx, []store.NewTask{again})
	require.NoError(t, err)
	require.True(t, res2[0].Duplicate)
	require.Equal(t, res[0].Task.ID, res2[0].Task.ID)

	// Dedup keys are per tenant: the same key in another tenant creates a
	// task of its own and reveals nothing of the first.
	other := newTask("noop")
	other.DedupKey, other.SchemaName = "k1", "s_other"
	res3, err := b.store.InsertTasks(b.ctx, []store.NewTask{other})
	require.NoError(t, err)
	require.False(t, res3[0].Duplicate)
	require.NotEqual(t, res[0].Task.ID, res3[0].Task.ID)
	require.Equal(t, "s_other", res3[0].Task.SchemaName)

	_, err = b.store.GetTask(b.ctx, uuid.Must(store.NewIDAt(clock.Now())))
	require.ErrorIs(t, err, wftype.ErrNotFound)
}

// TestDedupConcurrent: 100 concurrent enqueues with one key make one task.
func TestDedupConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	results := insertConcurrently(t, b, 100, func(int) store.NewTask { return keyedTask("same", time.Time{}) })
	inserted := 0
	for _, r := range results {
		require.Equal(t, results[0].Task.ID, r.Task.ID)
		if !r.Duplicate {
			inserted++
		}
	}
	require.Equal(t, 1, inserted)
	require.Equal(t, 1, countKey(t, b, "same"))
}

// keyedTask is a noop task under dedup key; with at set, its id is of that
// instant (so it goes to at's month's partition).
func keyedTask(key string, at time.Time) store.NewTask {
	nt := newTask("noop")
	nt.DedupKey = key
	if !at.IsZero() {
		nt.ID = uuid.Must(store.NewIDAt(at))
	}
	return nt
}

// insertConcurrently inserts n tasks, task(i) each, from n goroutines at
// once, and returns their results; every insert must succeed.
func insertConcurrently(t *testing.T, b *bundle, n int, task func(i int) store.NewTask) []store.InsertResult {
	t.Helper()
	var wg sync.WaitGroup
	results := make([]store.InsertResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.store.InsertTasks(b.ctx, []store.NewTask{task(i)})
			if errs[i] = err; err == nil {
				results[i] = r[0]
			}
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
	}
	return results
}

// countKey counts the tasks under dedup key, whatever their status.
func countKey(t *testing.T, b *bundle, key string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE dedup_key = $1`, key).Scan(&n))
	return n
}

// TestDedupAcrossMonthBoundary: a PENDING task in one month's partition
// blocks the same key in the next month's, concurrently too.
func TestDedupAcrossMonthBoundary(t *testing.T) {
	t.Parallel()
	b := setup(t)
	jan := time.Date(2031, 1, 31, 23, 59, 59, 0, time.UTC)
	feb := time.Date(2031, 2, 1, 0, 0, 1, 0, time.UTC)
	_, err := b.store.EnsurePartitions(b.ctx, jan, 2)
	require.NoError(t, err)

	first := keyedTask("month-key", jan)
	res, err := b.store.InsertTasks(b.ctx, []store.NewTask{first})
	require.NoError(t, err)
	require.False(t, res[0].Duplicate)

	results := insertConcurrently(t, b, 20, func(i int) store.NewTask {
		return keyedTask("month-key", feb.Add(time.Duration(i)*time.Millisecond))
	})
	for _, r := range results {
		require.True(t, r.Duplicate)
		require.Equal(t, first.ID, r.Task.ID)
	}
	require.Equal(t, 1, countKey(t, b, "month-key"))

	// Once the first finishes, the key is free again.
	claimed := claimAll(t, b, "noop", 10)
	require.Len(t, claimed, 1)
	b.finishOne(t, "w1", store.Finish{ID: first.ID, Status: wftype.StatusCompleted})
	r, err := b.store.InsertTasks(b.ctx, []store.NewTask{keyedTask("month-key", feb)})
	require.NoError(t, err)
	require.False(t, r[0].Duplicate)

	// Requeueing the finished one now conflicts with the live holder.
	_, err = b.store.RequeueTask(b.ctx, first.ID)
	require.ErrorIs(t, err, wftype.ErrConflict)
}

func claimAll(t *testing.T, b *bundle, taskType string, n int) []wftype.Task {
	t.Helper()
	got, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{
		Owner: "w1", Total: n,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: taskType, Max: n, Lease: time.Minute}},
	})
	require.NoError(t, err)
	return got
}

func TestClaimOrderLimitsAndModes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var batch []store.NewTask
	for i := range 5 {
		nt := newTask("a")
		nt.Priority = i % 2
		batch = append(batch, nt)
	}
	syncTask := newTask("a")
	syncTask.ExecutionMode = wftype.ModeSync
	later := newTask("b")
	future := clock.Now().Add(time.Hour)
	later.RunAfter = &future
	batch = append(batch, syncTask, later, newTask("b"))
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)

	got, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{
		Owner: "w1", Total: 3,
		Slots: []store.ClaimSlot{
			{Mode: wftype.ModeAsync, TaskType: "a", Max: 10, Lease: time.Minute},
			{Mode: wftype.ModeAsync, TaskType: "b", Max: 10, Lease: time.Minute},
		},
	})
	require.NoError(t, err)
	require.Len(t, got, 3)
	// Priority 1 tasks first.
	require.Equal(t, 1, got[0].Priority)
	for _, tk := range got {
		require.Equal(t, wftype.StatusActive, tk.Status)
		require.Equal(t, "w1", *tk.OwnerID)
		require.Equal(t, 1, tk.Attempts)
		require.NotNil(t, tk.LockedUntil)
		require.Equal(t, wftype.ModeAsync, tk.ExecutionMode)
	}
	// Per-pair max is honoured.
	got, err = b.store.ClaimTasks(b.ctx, store.ClaimParams{
		Owner: "w1", Total: 100,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "a", Max: 1, Lease: time.Minute}},
	})
	require.NoError(t, err)
	require.Len(t, got, 1)
	// The future task of b is not due; the due one is claimed.
	got = claimAll(t, b, "b", 10)
	require.Len(t, got, 1)
	// The remaining async a's, never the sync one.
	got = claimAll(t, b, "a", 10)
	require.Len(t, got, 1)
	// With a clock an hour ahead, the future task is due.
	ahead := clock.Now().Add(2 * time.Hour)
	got, err = b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w2", Total: 10, Now: &ahead,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "b", Max: 10, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, got, 1)
}

// TestClaimExactlyOnce: 8 claimers racing over 2,000 tasks take each exactly once.
func TestClaimExactlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const total = 2000
	batch := make([]store.NewTask, total)
	for i := range batch {
		batch[i] = newTask("noop")
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)

	var mu sync.Mutex
	seen := map[uuid.UUID]string{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			for {
				got, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: owner, Total: 37,
					Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 37, Lease: time.Minute}}})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range got {
					if prev, dup := seen[tk.ID]; dup {
						t.Errorf("task %s claimed by %s and %s", tk.ID, prev, owner)
					}
					seen[tk.ID] = owner
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, total)
}

// insertClaimed inserts n tasks of taskType and claims them all as w1.
func insertClaimed(t *testing.T, b *bundle, taskType string, n int) []store.InsertResult {
	t.Helper()
	tasks := make([]store.NewTask, n)
	for i := range tasks {
		tasks[i] = newTask(taskType)
	}
	res, err := b.store.InsertTasks(b.ctx, tasks)
	require.NoError(t, err)
	require.Len(t, claimAll(t, b, taskType, 10*n), n)
	return res
}

func TestFinishRetryDeadLetterAndEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := insertClaimed(t, b, "x", 3)
	msg := "boom"
	retryAt := clock.Now().Add(time.Hour)
	done, err := b.store.FinishTasks(b.ctx, store.FinishParams{Owner: "w1"}, []store.Finish{
		{ID: res[0].Task.ID, Status: wftype.StatusCompleted, Outputs: json.RawMessage(`{"ok":true}`)},
		{ID: res[1].Task.ID, Status: wftype.StatusPending, Error: &msg, RetryCount: 1, RunAfter: &retryAt},
		{ID: res[2].Task.ID, Status: wftype.StatusDeadLetter, Error: &msg, RetryCount: 3},
	})
	require.NoError(t, err)
	require.Len(t, done, 3)

	t0, _ := b.store.GetTask(b.ctx, res[0].Task.ID)
	require.Equal(t, wftype.StatusCompleted, t0.Status)
	require.JSONEq(t, `{"ok":true}`, string(t0.Outputs))
	require.NotNil(t, t0.FinishedAt)
	t1, _ := b.store.GetTask(b.ctx, res[1].Task.ID)
	require.Equal(t, wftype.StatusPending, t1.Status)
	require.Equal(t, 1, t1.RetryCount)
	require.Nil(t, t1.OwnerID)
	require.WithinDuration(t, retryAt, t1.RunAfter, time.Millisecond)
	t2, _ := b.store.GetTask(b.ctx, res[2].Task.ID)
	require.Equal(t, wftype.StatusDeadLetter, t2.Status)

	var evType string
	var payload map[string]any
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT event_type, payload FROM tasks.events`).Scan(&evType, &payload))
	require.Equal(t, "task.dead_lettered", evType)
	require.Equal(t, res[2].Task.ID.String(), payload["task_id"])

	// A second finish of the same task changes nothing (not ACTIVE any more).
	done, err = b.store.FinishTasks(b.ctx, store.FinishParams{Owner: "w1"}, []store.Finish{{ID: res[0].Task.ID, Status: wftype.StatusFailed}})
	require.NoError(t, err)
	require.Empty(t, done)
	// Requeue the dead letter.
	rq, err := b.store.RequeueTask(b.ctx, res[2].Task.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusPending, rq.Status)
	require.Equal(t, 0, rq.RetryCount)
	_, err = b.store.RequeueTask(b.ctx, res[2].Task.ID)
	require.ErrorIs(t, err, wftype.ErrConflict)
}

func TestHeartbeatOwnershipReleaseAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := insertClaimed(t, b, "x", 3)
	_, err := b.store.CancelTask(b.ctx, res[0].Task.ID)
	require.NoError(t, err)

	leases := []store.Lease{{ID: res[0].Task.ID, Lease: time.Minute}, {ID: res[1].Task.ID, Lease: time.Minute}, {ID: res[2].Task.ID, Lease: time.Minute}}
	held, err := b.store.Heartbeat(b.ctx, "w1", leases, nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{res[1].Task.ID, res[2].Task.ID}, held)
	held, err = b.store.Heartbeat(b.ctx, "someone-else", leases, nil)
	require.NoError(t, err)
	require.Empty(t, held)

	released, err := b.store.ReleaseTasks(b.ctx, "w1", []uuid.UUID{res[1].Task.ID})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{res[1].Task.ID}, released)
	t1, _ := b.store.GetTask(b.ctx, res[1].Task.ID)
	require.Equal(t, wftype.StatusPending, t1.Status)
	require.Equal(t, 0, t1.Attempts)
	require.Equal(t, 0, t1.RetryCount)
}

func TestExpiredLeasesAndOrphans(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.pool.Exec(b.ctx, `INSERT INTO catalog.catalogs (catalog_id, schema_name) VALUES ('alive', 's_alive')`)
	require.NoError(t, err)
	alive, gone := newTask("x"), newTask("x")
	alive.SchemaName, alive.Scope = "s_alive", wftype.ScopeCatalog
	gone.SchemaName, gone.Scope = "s_gone", wftype.ScopeCatalog
	res, err := b.store.InsertTasks(b.ctx, []store.NewTask{newTask("y"), alive, gone})
	require.NoError(t, err)

	n, err := b.store.DeadLetterOrphans(b.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	g, _ := b.store.GetTask(b.ctx, res[2].Task.ID)
	require.Equal(t, wftype.StatusDeadLetter, g.Status)
	require.Contains(t, *g.Error, "s_gone")
	// Its task.dead_lettered names it, and its record of emitted events
	// holds that event.
	evs, err := b.store.TaskEvents(b.ctx, g.ID)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, "task.dead_lettered", evs[0].EventType)
	require.Equal(t, store.EventPending, evs[0].Status)
	var source uuid.UUID
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT source_task_id FROM tasks.events WHERE event_id = $1 AND created_at = $2`,
		evs[0].ID, evs[0].CreatedAt).Scan(&source))
	require.Equal(t, g.ID, source)

	claimAll(t, b, "y", 1)
	future := clock.Now().Add(2 * time.Minute)
	err = b.store.InTx(b.ctx, func(tx *store.Store) error {
		exp, _, err := tx.ExpiredLeases(b.ctx, nil, 10)
		require.NoError(t, err)
		require.Empty(t, exp)
		exp, _, err = tx.ExpiredLeases(b.ctx, &future, 10)
		require.NoError(t, err)
		require.Len(t, exp, 1)
		done, err := tx.FinishTasks(b.ctx, store.FinishParams{ExpiredBefore: &future}, []store.Finish{
			{ID: exp[0].ID, Status: wftype.StatusPending, RetryCount: 1},
		})
		require.Len(t, done, 1)
		return err
	})
	require.NoError(t, err)
}

func TestListTasksKeyset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	batch := make([]store.NewTask, 25)
	for i := range batch {
		batch[i] = newTask("l")
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	seen := map[uuid.UUID]bool{}
	f := store.TaskFilter{TaskTypes: []string{"l"}, Statuses: []wftype.TaskStatus{wftype.StatusPending}, Limit: 10}
	for {
		page, err := b.store.ListTasks(b.ctx, f)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		for _, tk := range page {
			require.False(t, seen[tk.ID])
			seen[tk.ID] = true
		}
		last := page[len(page)-1]
		f.AfterTime, f.AfterID = &last.Timestamp, &last.ID
	}
	require.Len(t, seen, 25)
}

// TestEnsureMonthDoesNotQueueBehindLongTransactions checks that creating a
// missing month's partition gives up while a long transaction holds the
// table, instead of queueing an exclusive lock that would stall every
// statement on it, and succeeds once the transaction ends.
func TestEnsureMonthDoesNotQueueBehindLongTransactions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	far := time.Date(2091, 3, 14, 0, 0, 0, 0, time.UTC) // no partition that far ahead
	long, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer func() { _ = long.Rollback(b.ctx) }()
	_, err = long.Exec(b.ctx, `SELECT count(*) FROM tasks.tasks`) // holds ACCESS SHARE until the end
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { done <- b.store.EnsureMonth(b.ctx, far) }()
	// While EnsureMonth retries, other statements on the table are not
	// stuck behind it for longer than one attempt's lock timeout.
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		var n int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM tasks.tasks`).Scan(&n)
		cancel()
		require.NoError(t, err, "a reader waited behind the partition's creation")
		time.Sleep(100 * time.Millisecond) // wall time: a real PostgreSQL session holds the lock meanwhile
	}
	err = <-done
	require.ErrorIs(t, err, store.ErrLockNotAvailable)
	require.ErrorContains(t, err, "2091-03")
	var exists bool
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT to_regclass('tasks.tasks_p2091_03') IS NOT NULL`).Scan(&exists))
	require.False(t, exists)

	require.NoError(t, long.Rollback(b.ctx))
	require.NoError(t, b.store.EnsureMonth(b.ctx, far))
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT to_regclass('tasks.tasks_p2091_03') IS NOT NULL AND to_regclass('tasks.events_p2091_03') IS NOT NULL`).Scan(&exists))
	require.True(t, exists)
	require.NoError(t, b.store.EnsureMonth(b.ctx, far), "an existing month is fine")
}

// TestProgressWithCharactersJSONBRefuses: a progress report holding what
// jsonb refuses though JSON allows it (\u0000, a lone surrogate) is stored
// with U+FFFD in their place instead of failing the report.
func TestProgressWithCharactersJSONBRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.insertOne(t, "progress")
	require.NoError(t, b.store.SetProgress(b.ctx, id, json.RawMessage(`{"msg":"a\u0000b","half":"\ud800"}`)))
	got, err := b.store.GetProgress(b.ctx, id)
	require.NoError(t, err)
	require.JSONEq(t, `{"msg":"a\ufffdb","half":"\ufffd"}`, string(got))
}

// TestKeyValueReads: the bench's and the chaos check's reads of (key,
// value) rows give a map of what exists, empty (not nil) when nothing does.
func TestKeyValueReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := []uuid.UUID{b.insertOne(t, "kv"), b.insertOne(t, "kv")}
	claimed := claimAll(t, b, "kv", 1)
	require.Len(t, claimed, 1)
	waiting := ids[0]
	if waiting == claimed[0].ID {
		waiting = ids[1]
	}
	statuses, err := b.store.TaskStatuses(b.ctx, append(ids, uuid.New()))
	require.NoError(t, err)
	require.Equal(t, map[uuid.UUID]string{claimed[0].ID: "ACTIVE", waiting: "PENDING"}, statuses)
	perInput, err := b.store.TasksPerInput(b.ctx, "kv")
	require.NoError(t, err)
	require.Equal(t, map[int64]int{1: 2}, perInput)
	none, err := b.store.TasksPerInput(b.ctx, "none")
	require.NoError(t, err)
	require.NotNil(t, none)
	require.Empty(t, none)
	settings, err := b.store.ServerSettings(b.ctx, []string{"max_connections", "no_such_setting"})
	require.NoError(t, err)
	require.Len(t, settings, 1)
	require.NotEmpty(t, settings["max_connections"])
}

// TestOrphanSweepStopsRunningTasks: an ACTIVE task of a deleted tenant is
// announced as "CANCELLED:<id>" on the status channel when the orphan
// sweep dead-letters it, so its instance stops it now rather than at its
// next heartbeat; a PENDING one, which nothing runs, is not.
func TestOrphanSweepStopsRunningTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	running, waiting := newTask("x"), newTask("y")
	running.SchemaName, running.Scope = "s_gone", wftype.ScopeCatalog
	waiting.SchemaName, waiting.Scope = "s_gone", wftype.ScopeCatalog
	res, err := b.store.InsertTasks(b.ctx, []store.NewTask{running, waiting})
	require.NoError(t, err)
	require.Len(t, claimAll(t, b, "x", 1), 1)

	conn, err := b.pool.Acquire(b.ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(b.ctx, `LISTEN `+store.DefaultChannels.TaskStatusChanged)
	require.NoError(t, err)
	n, err := b.store.DeadLetterOrphans(b.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []string{"CANCELLED:" + res[0].Task.ID.String()},
		b.notifiedUntilEnd(t, conn, store.DefaultChannels.TaskStatusChanged))
}

// TestListTasksOfTenantWithActive: tasks_schema_time_idx holds no ACTIVE
// rows (migration 028), so a tenant's list reads them apart: its pages
// still hold every task of the tenant, ACTIVE ones included, newest first,
// whatever the status filter, and each part reads its index, not a
// partition of history.
func TestListTasksOfTenantWithActive(t *testing.T) {
	b := setupFinished(t, 100000)
	tenantTasks(t, b, "ta", "lt", 6, 0)
	tenantTasks(t, b, "tb", "lt", 3, 0)
	claimed, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w", Total: 3,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "lt", Max: 3, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	done, err := b.store.FinishTasks(b.ctx, store.FinishParams{Owner: "w"},
		[]store.Finish{{ID: claimed[0].ID, Status: wftype.StatusCompleted}})
	require.NoError(t, err)
	require.Len(t, done, 1)

	list := func(statuses ...wftype.TaskStatus) map[wftype.TaskStatus]int {
		t.Helper()
		f := store.TaskFilter{SchemaNames: []string{"ta"}, Statuses: statuses, Limit: 2}
		n := map[wftype.TaskStatus]int{}
		var last *wftype.Task
		for {
			page, err := b.store.ListTasks(b.ctx, f)
			require.NoError(t, err)
			if len(page) == 0 {
				return n
			}
			for i := range page {
				tk := page[i]
				require.Equal(t, "ta", tk.SchemaName)
				if last != nil {
					c := tk.Timestamp.Compare(last.Timestamp)
					require.True(t, c < 0 || c == 0 && bytes.Compare(tk.ID[:], last.ID[:]) < 0, "newest first")
				}
				last = &tk
				n[tk.Status]++
			}
			f.AfterTime, f.AfterID = &page[len(page)-1].Timestamp, &page[len(page)-1].ID
		}
	}
	all := map[wftype.TaskStatus]int{wftype.StatusPending: 3, wftype.StatusActive: 2, wftype.StatusCompleted: 1}
	require.Equal(t, all, list())
	require.Equal(t, map[wftype.TaskStatus]int{wftype.StatusActive: 2}, list(wftype.StatusActive))
	require.Equal(t, map[wftype.TaskStatus]int{wftype.StatusPending: 3, wftype.StatusActive: 2},
		list(wftype.StatusPending, wftype.StatusActive))
	require.Equal(t, map[wftype.TaskStatus]int{wftype.StatusCompleted: 1}, list(wftype.StatusCompleted))

	_, err = b.pool.Exec(b.ctx, `ANALYZE tasks.tasks`)
	require.NoError(t, err)
	for _, statuses := range [][]wftype.TaskStatus{nil, {wftype.StatusActive}, {wftype.StatusCompleted}} {
		var names []string
		for _, st := range statuses {
			names = append(names, string(st))
		}
		plan := explainAnalyze(t, b, b.pool, store.ListTasksSQL(statuses),
			names, nil, []string{"ta"}, nil, nil, nil, nil, 2)
		if len(statuses) == 0 || statuses[0] != wftype.StatusActive {
			require.Contains(t, plan, "schema_name_timestamp", "the tenant/time index")
		}
		if len(statuses) == 0 || statuses[0] == wftype.StatusActive {
			require.Contains(t, plan, "locked_until_idx", "the lease index for ACTIVE rows")
		}
		requireNoFinishedScan(t, b, plan, "a tenant's list")
	}
}
