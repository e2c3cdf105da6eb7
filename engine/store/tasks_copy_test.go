package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// answer is what became of one task of a batch, in words that do not
// depend on its ids: "inserted", or "duplicate of " the batch's index of
// the holder, or of "live" (the task inserted before the batch).
type answer string

// answers describes res, the results of batch, against live (the id of the
// task that held a key before the batch).
func answers(t *testing.T, batch []store.NewTask, res []store.InsertResult, live uuid.UUID) []answer {
	t.Helper()
	require.Len(t, res, len(batch))
	index := map[uuid.UUID]int{}
	for i, nt := range batch {
		index[nt.ID] = i
	}
	out := make([]answer, len(res))
	for i, r := range res {
		require.False(t, r.Released, "task %d", i)
		switch {
		case !r.Duplicate:
			require.Equal(t, batch[i].ID, r.Task.ID, "task %d", i)
			out[i] = "inserted"
		case r.Task.ID == live:
			out[i] = "duplicate of live"
		default:
			j, ok := index[r.Task.ID]
			require.True(t, ok, "task %d: duplicate of an unknown task %s", i, r.Task.ID)
			out[i] = answer(fmt.Sprintf("duplicate of %d", j))
		}
	}
	return out
}

// mixedBatch is a batch of n tasks (n ≥ 12) of two types, in two months
// (from and a month later), with and without dedup keys: a key repeated
// inside the batch, the key "held" of a live task, the same key in another
// tenant, delays to the nanosecond, priorities, trace contexts and empty
// inputs.
func mixedBatch(n int, from time.Time) []store.NewTask {
	batch := make([]store.NewTask, n)
	for i := range batch {
		nt := newTask("noop")
		if i%2 == 1 {
			nt.TaskType = "other"
		}
		at := from.Add(time.Duration(i) * time.Millisecond)
		if i%3 == 0 {
			at = at.AddDate(0, 1, 0)
		}
		nt.ID = uuid.Must(store.NewIDAt(at))
		nt.Priority = i % 4
		switch i % 6 {
		case 1:
			nt.DedupKey = fmt.Sprintf("own-%d", i)
		case 2:
			nt.DedupKey = fmt.Sprintf("shared-%d", i%4) // "shared-0" and "shared-2", each several times
		case 3:
			ra := from.Add(time.Hour + time.Duration(i)*time.Nanosecond + 123*time.Nanosecond)
			nt.RunAfter = &ra
			nt.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		case 4:
			nt.Inputs = nil
		}
		batch[i] = nt
	}
	batch[5].DedupKey = "held"
	batch[7].DedupKey, batch[7].SchemaName = "held", "s_other"
	batch[11].DedupKey = "held"
	return batch
}

// TestInsertTasksCopyAnswersAsStatement: the same batch, through COPY and
// through one statement (each in a database of its own), inserts the same
// tasks and gives the same answers; the rows a COPY returns are the rows
// read back (but for jsonb's rendering of the inputs), in the right
// partitions.
func TestInsertTasksCopyAnswersAsStatement(t *testing.T) {
	t.Parallel()
	from := time.Date(2031, 3, 20, 10, 0, 0, 0, time.UTC)
	run := func(viaCopy bool) []answer {
		b := setup(t)
		_, err := b.store.EnsurePartitions(b.ctx, from, 3)
		require.NoError(t, err)
		held := keyedTask("held", from.Add(-time.Hour))
		_, err = b.store.InsertTasks(b.ctx, []store.NewTask{held})
		require.NoError(t, err)
		batch := mixedBatch(600, from)
		res, err := b.store.InsertTasksVia(b.ctx, batch, viaCopy)
		require.NoError(t, err)
		got := answers(t, batch, res, held.ID)
		for i, r := range res {
			row, err := b.store.GetTask(b.ctx, r.Task.ID)
			require.NoError(t, err)
			require.JSONEq(t, string(row.Inputs), string(r.Task.Inputs), "task %d", i)
			r.Task.Inputs = row.Inputs
			require.Equal(t, row, r.Task, "task %d", i)
		}
		var months int
		require.NoError(t, b.pool.QueryRow(b.ctx, `
SELECT count(DISTINCT tableoid) FROM tasks.tasks WHERE "timestamp" >= $1`, from).Scan(&months))
		require.Equal(t, 2, months)
		return got
	}
	viaCopy, viaStatement := run(true), run(false)
	require.Equal(t, viaStatement, viaCopy)
	require.Equal(t, answer("duplicate of live"), viaCopy[5])
	require.Equal(t, answer("inserted"), viaCopy[7]) // another tenant's key
	require.Equal(t, answer("duplicate of live"), viaCopy[11])
	require.Equal(t, answer("inserted"), viaCopy[2])
	require.Equal(t, answer("duplicate of 2"), viaCopy[14])
	require.Equal(t, answer("inserted"), viaCopy[8])
	require.Equal(t, answer("duplicate of 8"), viaCopy[20])
}

// TestInsertTasksNotifies: an insert notifies the queued channel once per
// type it inserted a task of, not for a type whose only task was a
// duplicate, and names the tenant when one tenant queued all of a type's
// tasks (store.QueuedPayload), through COPY and through the statement.
func TestInsertTasksNotifies(t *testing.T) {
	t.Parallel()
	for _, viaCopy := range []bool{true, false} {
		t.Run(fmt.Sprintf("copy=%t", viaCopy), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			held := keyedTask("held", time.Time{})
			held.TaskType = "third"
			_, err := b.store.InsertTasks(b.ctx, []store.NewTask{held})
			require.NoError(t, err)

			conn, err := b.pool.Acquire(b.ctx)
			require.NoError(t, err)
			defer conn.Release()
			_, err = conn.Exec(b.ctx, `LISTEN new_task_queued`)
			require.NoError(t, err)

			batch := make([]store.NewTask, 600)
			for i := range batch {
				batch[i] = newTask("noop")
				if i%2 == 1 {
					batch[i] = keyedTask(fmt.Sprintf("k%d", i), time.Time{})
					batch[i].TaskType = "other"
				}
			}
			batch[0] = keyedTask("held", time.Time{})
			batch[0].TaskType = "third"
			batch[2].SchemaName, batch[2].Scope = "ta", wftype.ScopeCatalog // noop: two tenants
			_, err = b.store.InsertTasksVia(b.ctx, batch, viaCopy)
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"noop", store.QueuedPayload("other", wftype.SystemSchema)},
				b.notifiedUntilEnd(t, conn, "new_task_queued"))
			tt, tenant := store.ParseQueued(store.QueuedPayload("other", "ta"))
			require.Equal(t, []string{"other", "ta"}, []string{tt, tenant})
			tt, tenant = store.ParseQueued("noop")
			require.Equal(t, []string{"noop", ""}, []string{tt, tenant})
		})
	}
}

// notifiedUntilEnd sends "end" on channel, which conn listens to, and
// returns the payloads conn received before it: those of the
// notifications committed before this call.
func (b *bundle) notifiedUntilEnd(t *testing.T, conn *pgxpool.Conn, channel string) []string {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, `SELECT pg_notify($1, 'end')`, channel)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	var got []string
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		require.NoError(t, err)
		if n.Payload == "end" {
			return got
		}
		got = append(got, n.Payload)
	}
}

// TestInsertTasksCopyAllOrNothing: a batch with one bad task (a tenant name
// longer than the column) inserts nothing and holds none of its keys; in a
// caller's transaction, the COPY is part of it.
func TestInsertTasksCopyAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	batch := make([]store.NewTask, 600)
	for i := range batch {
		batch[i] = keyedTask(fmt.Sprintf("k%d", i), time.Time{})
	}
	// Without a key, it fails in the COPY, after the other keys were taken.
	batch[599].SchemaName, batch[599].DedupKey = strings.Repeat("s", 300), ""
	_, err := b.store.InsertTasksVia(b.ctx, batch, true)
	require.ErrorContains(t, err, "error copying tasks")
	requireTasks(t, b.pool, 0, 0)

	batch[599].SchemaName = wftype.SystemSchema
	err = b.store.InTx(b.ctx, func(tx *store.Store) error {
		res, err := tx.InsertTasksVia(b.ctx, batch, true)
		require.NoError(t, err)
		require.False(t, res[0].Duplicate)
		return fmt.Errorf("roll back")
	})
	require.EqualError(t, err, "roll back")
	requireTasks(t, b.pool, 0, 0)

	err = b.store.InTx(b.ctx, func(tx *store.Store) error {
		_, err := tx.InsertTasksVia(b.ctx, batch, true)
		return err
	})
	require.NoError(t, err)
	requireTasks(t, b.pool, 600, 599)
}

// requireTasks checks the number of tasks and of held dedup keys.
func requireTasks(t *testing.T, pool *pgxpool.Pool, wantTasks, wantKeys int) {
	t.Helper()
	var tasks, keys int
	require.NoError(t, pool.QueryRow(context.Background(), `
SELECT (SELECT count(*) FROM tasks.tasks), (SELECT count(*) FROM tasks.task_dedup)`).Scan(&tasks, &keys))
	require.Equal(t, wantTasks, tasks)
	require.Equal(t, wantKeys, keys)
}

// TestInsertTasksCopyConcurrentDedup: 8 goroutines insert batches of 1,000
// at once, half through COPY and half through one statement, each batch
// holding all 100 shared keys (twice, some batches in reverse order) and 800
// tasks without a key: every
// key makes one task, which every other task of that key gets as its
// duplicate, and every task without a key is inserted.
func TestInsertTasksCopyConcurrentDedup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const workers, size, keys = 8, 1000, 100
	results := make([][]store.InsertResult, workers)
	batches := make([][]store.NewTask, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		batch := make([]store.NewTask, size)
		for i := range batch {
			batch[i] = newTask("noop")
			if i%5 == w%5 {
				// In key order, but for every other COPY, which takes them
				// in reverse (the statement would then deadlock with the
				// others; copyTasks takes its keys in order).
				k := (i / 5) % keys
				if w%4 == 2 {
					k = keys - 1 - k
				}
				batch[i] = keyedTask(fmt.Sprintf("shared-%03d", k), time.Time{})
			}
			batch[i].Inputs = json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))
		}
		batches[w] = batch
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w], errs[w] = b.store.InsertTasksVia(b.ctx, batch, w%2 == 0)
		}()
	}
	wg.Wait()
	winners := map[string]uuid.UUID{}
	free := 0
	for w := range workers {
		require.NoError(t, errs[w])
		for i, r := range results[w] {
			key := batches[w][i].DedupKey
			if key == "" {
				require.False(t, r.Duplicate)
				require.Equal(t, batches[w][i].ID, r.Task.ID)
				free++
				continue
			}
			require.False(t, r.Released)
			if !r.Duplicate {
				_, seen := winners[key]
				require.False(t, seen, "key %s inserted twice", key)
				winners[key] = r.Task.ID
			}
		}
	}
	require.Len(t, winners, keys)
	for w := range workers {
		for i, r := range results[w] {
			if key := batches[w][i].DedupKey; key != "" {
				require.Equal(t, winners[key], r.Task.ID, "worker %d task %d key %s", w, i, key)
			}
		}
	}
	var rows int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks`).Scan(&rows))
	require.Equal(t, free+keys, rows)
	require.Equal(t, workers*(size-2*keys), free)
}
