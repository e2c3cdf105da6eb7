package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// copyMinTasks is the smallest batch InsertTasks writes through COPY. A
// COPY takes four round trips (begin, keys, copy, commit) where the one
// statement of insertTasksSQL takes one, and it pays off from a few hundred
// rows on (BenchmarkInsertTasks; BENCHMARKS.md).
const copyMinTasks = 500

// takeKeysSQL is the first statement of a COPY insert: it takes the batch's
// dedup keys in task_dedup (one task per key, the first of the batch, as in
// insertTasksSQL: copyTasks leaves the others out), notifies the queued
// channel once per task type that gets a task (those without a key, $6, and
// those whose key was taken; $5 and $6 hold the types' payloads,
// QueuedPayload; delivered at commit, so only if the COPY succeeds), and returns the transaction's now() (the run_after of the tasks
// that give none, as the column's default would be) and the ids of the tasks
// whose key it took. A key held by another live task is left to its holder;
// a key another transaction is inserting waits for it, as in insertTasksSQL.
var takeKeysSQL = `
WITH keyed AS MATERIALIZED (
    SELECT *
    FROM unnest($1::text[], $2::text[], $3::uuid[], $4::timestamptz[], $5::text[], $8::float8[], $9::text[])
         AS k(schema_name, dedup_key, task_id, ts, payload, unique_seconds, keep_states)
),
inserted_keys AS (
    INSERT INTO tasks.task_dedup (schema_name, dedup_key, task_id, task_timestamp, expires_at, keep_states)
    SELECT schema_name, dedup_key, task_id, ts, ` + dedupExpirySQL + ` FROM keyed
    ON CONFLICT (schema_name, dedup_key) DO NOTHING
    RETURNING task_id
),
` + takeOverKeys(`(SELECT * FROM keyed WHERE NOT EXISTS (SELECT 1 FROM inserted_keys x WHERE x.task_id = keyed.task_id))`) + `,
taken AS (SELECT task_id FROM inserted_keys UNION ALL SELECT task_id FROM taken_over),
notified AS (
    SELECT count(pg_notify($7, q.payload)) AS n
    FROM (SELECT unnest($6::text[]) AS payload
          UNION
          SELECT k.payload FROM taken JOIN keyed k USING (task_id)) q
)
SELECT now(), coalesce((SELECT array_agg(task_id) FROM taken), '{}')
FROM notified`

// queuedPayloads returns, per task type of tasks, the payload of its
// task-queued notification (QueuedPayload): with the tenant when one
// tenant has all of that type's tasks in the batch.
func queuedPayloads(tasks []NewTask) map[string]string {
	tenants := map[string]string{} // per type, its one tenant, or "" once several
	for i := range tasks {
		t := &tasks[i]
		if one, ok := tenants[t.TaskType]; !ok {
			tenants[t.TaskType] = t.SchemaName
		} else if one != t.SchemaName {
			tenants[t.TaskType] = ""
		}
	}
	payloads := make(map[string]string, len(tenants))
	for tt, one := range tenants {
		payloads[tt] = QueuedPayload(tt, one)
	}
	return payloads
}

// copyTasks inserts tasks (their ids set) as insertTasksSQL does, in one
// transaction (the caller's when the store runs on one): takeKeysSQL, then
// one COPY of the tasks without a key and of those whose key it took into
// tasks.tasks, which routes each row to its month's partition. It returns
// the tasks it inserted, as the rows read back would be, but for Inputs:
// those are the bytes given, where a row read back has jsonb's rendering of
// the same JSON.
func (s *Store) copyTasks(ctx context.Context, tasks []NewTask) ([]wftype.Task, error) {
	// The first task of each key, in key order: the batch's other tasks of
	// that key are its duplicates (settleInserts finds them), and
	// transactions that take keys in one order never wait for each other
	// in a cycle.
	var keyed []*NewTask
	seen := map[tenantKey]bool{}
	payloads := queuedPayloads(tasks)
	var freePayloads []string // of the types with tasks without a key
	for i := range tasks {
		t := &tasks[i]
		if t.DedupKey == "" {
			if p := payloads[t.TaskType]; !slices.Contains(freePayloads, p) {
				freePayloads = append(freePayloads, p)
			}
			continue
		}
		if k := (tenantKey{t.SchemaName, t.DedupKey}); !seen[k] {
			seen[k] = true
			keyed = append(keyed, t)
		}
	}
	slices.SortFunc(keyed, func(a, b *NewTask) int {
		return cmp.Or(strings.Compare(a.SchemaName, b.SchemaName), strings.Compare(a.DedupKey, b.DedupKey))
	})
	keySchemas, keys, keyPayloads := make([]string, len(keyed)), make([]string, len(keyed)), make([]string, len(keyed))
	keyIDs, keyTimes := make([][16]byte, len(keyed)), make([]time.Time, len(keyed))
	keyTasks := make([]NewTask, len(keyed))
	for i, t := range keyed {
		keySchemas[i], keys[i], keyPayloads[i], keyIDs[i], keyTimes[i] = t.SchemaName, t.DedupKey, payloads[t.TaskType], t.ID, IDTime(t.ID)
		keyTasks[i] = *t
	}
	uniqueSeconds, keepStates := uniqueArgs(keyTasks)
	src := &taskCopyReader{tasks: tasks}
	write := func(tx pgx.Tx) error {
		var won [][16]byte
		err := tx.QueryRow(ctx, takeKeysSQL, keySchemas, keys, keyIDs, keyTimes, keyPayloads, freePayloads, s.channels.TaskQueued,
			uniqueSeconds, keepStates).
			Scan(&src.now, &won)
		if err != nil {
			return wrap("taking the dedup keys of tasks", err)
		}
		src.won = make(map[uuid.UUID]bool, len(won))
		for _, id := range won {
			src.won[id] = true
		}
		_, err = tx.Conn().PgConn().CopyFrom(ctx, src, copyTasksSQL)
		return wrap("copying tasks", err)
	}
	if tx, ok := s.db.(pgx.Tx); ok {
		if err := write(tx); err != nil {
			return nil, err
		}
	} else {
		var stepErr error // write's own error, already wrapped
		err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			stepErr = write(tx)
			return stepErr
		})
		if err != nil && err != stepErr { // beginning or committing failed
			err = wrap("beginning or committing the copy of tasks", err)
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]wftype.Task, 0, len(tasks))
	for i := range tasks {
		if t := &tasks[i]; src.copies(t) {
			out = append(out, copiedTask(t, src.now))
		}
	}
	return out, nil
}

// copiedTask is the row copyTasks wrote for t, as scanTask would read it.
func copiedTask(t *NewTask, now time.Time) wftype.Task {
	row := wftype.Task{
		ID: t.ID, Timestamp: IDTime(t.ID), SchemaName: t.SchemaName, Scope: t.Scope, ExecutionMode: t.ExecutionMode,
		TaskType: t.TaskType, Status: wftype.StatusPending, Inputs: taskInputs(t), Priority: t.Priority,
		MaxRetries: t.MaxRetries, RunAfter: runAfterOr(t, now), Traceparent: t.Traceparent,
	}
	if t.DedupKey != "" {
		k := t.DedupKey
		row.DedupKey = &k
	}
	utcTimes(&row)
	return row
}

// taskInputs returns t's inputs, {} when it has none.
func taskInputs(t *NewTask) []byte {
	if len(t.Inputs) == 0 {
		return []byte("{}")
	}
	return t.Inputs
}

// runAfterOr returns t's run_after as the database keeps it (to the
// microsecond), now when it has none.
func runAfterOr(t *NewTask, now time.Time) time.Time {
	if t.RunAfter == nil {
		return now
	}
	return t.RunAfter.Truncate(time.Microsecond)
}
