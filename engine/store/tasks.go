package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// taskColumns is the column list every task query returns, in scanTask's order.
const taskColumns = `task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, dedup_key,
    inputs, outputs, progress, error, priority, retry_count, max_retries, attempts, owner_id,
    run_after, locked_until, started_at, finished_at, last_heartbeat_at, snoozes, traceparent`

// taskColumnsT is taskColumns qualified with the alias t.
const taskColumnsT = `t.task_id, t."timestamp", t.schema_name, t.scope, t.execution_mode, t.task_type, t.status, t.dedup_key,
    t.inputs, t.outputs, t.progress, t.error, t.priority, t.retry_count, t.max_retries, t.attempts, t.owner_id,
    t.run_after, t.locked_until, t.started_at, t.finished_at, t.last_heartbeat_at, t.snoozes, t.traceparent`

func scanTask(row pgx.Row) (wftype.Task, error) { return scanTaskAnd(row) }

// scanTaskAnd scans a row of taskColumns followed by len(extra) more
// columns, which go to extra. A result of many rows is read with one
// taskScanner instead.
func scanTaskAnd(row pgx.Row, extra ...any) (wftype.Task, error) {
	return newTaskScanner(extra...).scan(row)
}

// taskScanner reads rows of taskColumns, then of the extra columns it was
// made with, into tasks. Its destinations are made once and serve every
// row of a result: a claim scans thousands of rows, and destinations made
// per row (the task, its id and text columns as scan targets, the list of
// them) were a dozen allocations each.
type taskScanner struct {
	t                         wftype.Task
	id                        [16]byte // as bytes: a uuid.UUID (an sql.Scanner) would go through text
	scope, mode, status       string
	inputs, outputs, progress []byte
	traceparent               *string
	dest                      []any
}

// newTaskScanner returns a scanner whose rows end with the columns that
// go to extra (read them after each scan).
func newTaskScanner(extra ...any) *taskScanner {
	s := &taskScanner{}
	t := &s.t
	s.dest = append(make([]any, 0, 24+len(extra)),
		&s.id, &t.Timestamp, &t.SchemaName, &s.scope, &s.mode, &t.TaskType, &s.status, &t.DedupKey,
		&s.inputs, &s.outputs, &s.progress, &t.Error, &t.Priority, &t.RetryCount, &t.MaxRetries, &t.Attempts, &t.OwnerID,
		&t.RunAfter, &t.LockedUntil, &t.StartedAt, &t.FinishedAt, &t.LastHeartbeatAt, &t.Snoozes, &s.traceparent)
	s.dest = append(s.dest, extra...)
	return s
}

// scan reads one row. What it returns shares no memory with the scanner
// (pgx scans every byte slice, string and pointer afresh), so the next row
// leaves it as it is.
func (s *taskScanner) scan(row pgx.Row) (wftype.Task, error) {
	s.t, s.inputs, s.outputs, s.progress, s.traceparent = wftype.Task{}, nil, nil, nil, nil
	if err := row.Scan(s.dest...); err != nil {
		return wftype.Task{}, err
	}
	t := s.t
	if s.traceparent != nil {
		t.Traceparent = *s.traceparent
	}
	t.ID = s.id
	t.Scope, t.ExecutionMode, t.Status = wftype.Scope(s.scope), wftype.ExecutionMode(s.mode), wftype.TaskStatus(s.status)
	t.Inputs, t.Outputs, t.Progress = s.inputs, s.outputs, s.progress
	utcTimes(&t)
	return t, nil
}

// utcTimes presents every time of a task in UTC, whatever the session's
// zone. The optional times are changed where they are: t's own, just scanned
// (a claim reads thousands).
func utcTimes(t *wftype.Task) {
	t.Timestamp, t.RunAfter = t.Timestamp.UTC(), t.RunAfter.UTC()
	for _, p := range [...]*time.Time{t.LockedUntil, t.StartedAt, t.FinishedAt, t.LastHeartbeatAt} {
		if p != nil {
			*p = p.UTC()
		}
	}
}

// NewTask is one task to insert.
type NewTask struct {
	ID            uuid.UUID // optional: a UUIDv7 is generated when zero
	SchemaName    string
	Scope         wftype.Scope
	ExecutionMode wftype.ExecutionMode
	TaskType      string
	DedupKey      string // "" means no deduplication
	// UniqueFor, when positive, keeps DedupKey held for that long after
	// the task's creation once it ended in one of UniqueStates (its task
	// type's unique period; migration 033).
	UniqueFor    time.Duration
	UniqueStates []wftype.TaskStatus
	// OnDuplicate says whether the task replaces a live task holding
	// DedupKey (its task type's on_duplicate); the default keeps that one.
	OnDuplicate OnDuplicate
	Inputs      json.RawMessage
	Priority    int
	MaxRetries  int
	RunAfter    *time.Time // nil means now
	// Traceparent is the W3C trace context of the span that enqueued the
	// task ("" when tracing is off): the engine continues its trace.
	Traceparent string
}

// InsertResult is the outcome of inserting one NewTask.
type InsertResult struct {
	Task wftype.Task
	// Duplicate is true when a live task already held the dedup key: Task is
	// that existing task and nothing was inserted.
	Duplicate bool
	// Released is true when the task holding the dedup key finished between
	// the insert and the look-up of the holder: nothing was inserted, nothing
	// found, and Task is zero. The key is free now: insert the task again
	// (the same NewTask). InsertTasks does not retry by itself, so that the
	// rest of a batch, already inserted, is never inserted twice.
	Released bool
	// Replaced is the task this one replaced (cancelled) to take its dedup
	// key, per the task's OnDuplicate; nil when it replaced none.
	Replaced *uuid.UUID
}

var insertTasksSQL = `
WITH input AS (
    SELECT *
    FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[],
                $7::text[], $8::jsonb[], $9::smallint[], $10::int[], $11::timestamptz[], $13::text[],
                $14::float8[], $15::text[]) WITH ORDINALITY
         AS i(task_id, ts, schema_name, scope, execution_mode, task_type, dedup_key, inputs, priority, max_retries, run_after,
              traceparent, unique_seconds, keep_states, ord)
),
dedup AS (
    INSERT INTO tasks.task_dedup (schema_name, dedup_key, task_id, task_timestamp, expires_at, keep_states)
    SELECT schema_name, dedup_key, task_id, ts, ` + dedupExpirySQL + `
    FROM input WHERE dedup_key IS NOT NULL
    ON CONFLICT (schema_name, dedup_key) DO NOTHING
    RETURNING task_id
),
` + takeOverKeys(firstOfEachKeySQL) + `,
inserted AS (
    INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, dedup_key,
                             inputs, priority, max_retries, run_after, traceparent)
    SELECT i.task_id, i.ts, i.schema_name, i.scope, i.execution_mode, i.task_type, i.dedup_key,
           i.inputs, i.priority, i.max_retries, coalesce(i.run_after, now()), i.traceparent
    FROM input i
    WHERE i.dedup_key IS NULL OR i.task_id IN (SELECT task_id FROM dedup UNION ALL SELECT task_id FROM taken_over)
    RETURNING ` + taskColumns + `
),
notified AS (
    SELECT count(pg_notify($12, q.payload)) AS n
    FROM (SELECT ` + queuedPayloadSQL + ` AS payload FROM inserted GROUP BY task_type) q
)
SELECT ` + taskColumns + ` FROM inserted, notified`

// existingByDedupSQL reads the tasks holding (tenant, key) pairs: a key is
// only ever compared within its tenant. An insert that did not take a key
// found its row live, or ended within its period (takeOverKeys).
const existingByDedupSQL = `
SELECT d.schema_name, d.dedup_key, ` + taskColumnsT + `
FROM unnest($1::text[], $2::text[]) AS k(schema_name, dedup_key)
JOIN tasks.task_dedup d ON d.schema_name = k.schema_name AND d.dedup_key = k.dedup_key
JOIN tasks.tasks t ON t.task_id = d.task_id AND t."timestamp" = d.task_timestamp`

// InsertTasks inserts tasks as PENDING and notifies the queued channel once
// per task type, in one transaction (the caller's when the store runs on
// one). A task whose dedup key is held by a live task is not inserted; its
// result is the existing task with Duplicate set (or Released, when that
// task finished meanwhile). Two tasks in one call with the same key: the
// first wins. A batch of fewer than copyMinTasks tasks is one statement
// (insertTasksSQL), a larger one a COPY (copyTasks), with the same answers;
// the inserted tasks a COPY returns carry their Inputs as given rather than
// as jsonb renders them.
// A task whose OnDuplicate replaces the live holder of its key cancels it
// and is inserted in its place (insertReplacing; Replaced names the holder).
// The partitions for the tasks' months must exist (EnsurePartitions).
func (s *Store) InsertTasks(ctx context.Context, tasks []NewTask) ([]InsertResult, error) {
	if replacing(tasks) {
		return s.insertReplacing(ctx, tasks)
	}
	return s.insertTasks(ctx, tasks, len(tasks) >= copyMinTasks)
}

// insertTasks is InsertTasks through COPY or through one statement.
func (s *Store) insertTasks(ctx context.Context, tasks []NewTask, viaCopy bool) ([]InsertResult, error) {
	if len(tasks) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(tasks))
	for i := range tasks {
		t := &tasks[i]
		if err := assignID(&t.ID, "inserting task"); err != nil {
			return nil, err
		}
		ids[i] = t.ID
	}
	insert := s.insertTasksStatement
	if viaCopy {
		insert = s.copyTasks
	}
	inserted, err := insert(ctx, tasks)
	if err != nil {
		return nil, err
	}
	results := make([]InsertResult, len(tasks))
	err = settleInserts(ctx, ids, func(i int) tenantKey { return tenantKey{tasks[i].SchemaName, tasks[i].DedupKey} },
		inserted, func(t *wftype.Task) uuid.UUID { return t.ID }, s.tasksByDedupKey,
		func(i int, row *wftype.Task, duplicate, released bool) {
			results[i] = InsertResult{Task: *row, Duplicate: duplicate, Released: released}
			if released {
				results[i].Task.ID = ids[i]
			}
		})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// insertTasksStatement inserts tasks (their ids set) with insertTasksSQL
// and returns the rows it inserted.
func (s *Store) insertTasksStatement(ctx context.Context, tasks []NewTask) ([]wftype.Task, error) {
	n := len(tasks)
	ids := make([]uuid.UUID, n)
	ts := make([]time.Time, n)
	schemas, scopes, modes, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	dedups := make([]*string, n)
	inputs := make([][]byte, n)
	prios := make([]int16, n)
	maxRetries := make([]int32, n)
	runAfter := make([]*time.Time, n)
	traces := make([]*string, n)
	for i := range tasks {
		t := &tasks[i]
		ids[i], ts[i] = t.ID, IDTime(t.ID)
		schemas[i], scopes[i], modes[i], types[i] = t.SchemaName, string(t.Scope), string(t.ExecutionMode), t.TaskType
		if t.DedupKey != "" {
			k := t.DedupKey
			dedups[i] = &k
		}
		inputs[i] = taskInputs(t)
		prios[i], maxRetries[i], runAfter[i] = int16(t.Priority), int32(t.MaxRetries), t.RunAfter
		if t.Traceparent != "" {
			tp := t.Traceparent
			traces[i] = &tp
		}
	}
	uniqueSeconds, keepStates := uniqueArgs(tasks)
	return queryAll(ctx, s.db, "inserting tasks", insertTasksSQL, scanTask, ids, ts, schemas, scopes, modes, types, dedups, inputs, prios,
		maxRetries, runAfter, s.channels.TaskQueued, traces, uniqueSeconds, keepStates)
}

func (s *Store) tasksByDedupKey(ctx context.Context, schemas, keys []string) (map[tenantKey]wftype.Task, error) {
	return holdersByKey(ctx, s.db, "looking up deduplicated tasks", existingByDedupSQL, scanTask, schemas, keys)
}

// LiveTaskByDedupKey returns the task of tenant schema that holds dedup key
// key, or nil when none does (the key is free: an enqueue with it would
// create a task) by a task created at at. The task is live, or it ended
// in one of the statuses that keep the key and its type's unique period is
// not over at at (NewTask.UniqueFor).
func (s *Store) LiveTaskByDedupKey(ctx context.Context, schema, key string, at time.Time) (*wftype.Task, error) {
	held, err := holdersByKey(ctx, s.db, "looking up deduplicated tasks", existingByDedupSQL+`
WHERE d.ended_at IS NULL OR d.expires_at > $3`, scanTask, []string{schema}, []string{key}, at)
	if err != nil {
		return nil, err
	}
	t, ok := held[tenantKey{schema, key}]
	if !ok {
		return nil, nil
	}
	return &t, nil
}

// GetTask returns one task by id. The id's embedded time prunes the look-up
// to one partition.
func (s *Store) GetTask(ctx context.Context, id uuid.UUID) (wftype.Task, error) {
	const q = `SELECT ` + taskColumns + ` FROM tasks.tasks WHERE task_id = $1 AND "timestamp" = $2`
	t, err := scanTask(s.db.QueryRow(ctx, q, id, IDTime(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("task %s: %w", id, wftype.ErrNotFound)
	}
	return t, wrap("reading task", err)
}

// TaskIDsBetween returns up to limit task ids in [lo, hi], in id order. A
// prefix of an id spans such a range (the prefix padded with 0s, then with
// fs), so callers resolve a short id with it, as git does; the times inside
// lo and hi bound "timestamp", so only the partitions they span are read.
func (s *Store) TaskIDsBetween(ctx context.Context, lo, hi uuid.UUID, limit int) ([]uuid.UUID, error) {
	const q = `
SELECT task_id
FROM tasks.tasks
WHERE task_id BETWEEN $1 AND $2
  AND "timestamp" BETWEEN $3 AND $4
ORDER BY task_id
LIMIT $5`
	return queryIDs(ctx, s.db, "looking up task ids", q, lo, hi, IDTime(lo), IDTime(hi), limit)
}

// TaskFilter selects tasks for ListTasks. Zero fields do not filter.
type TaskFilter struct {
	Statuses    []wftype.TaskStatus
	TaskTypes   []string
	SchemaNames []string
	From, To    *time.Time // creation time range, [From, To)
	// After is the keyset cursor: tasks strictly older than this (timestamp, id).
	AfterTime *time.Time
	AfterID   *uuid.UUID
	Limit     int // default 100, at most 1000
}

// ListTasks returns tasks newest first, filtered, one page at a time (keyset
// pagination on (timestamp, task_id)).
//
// tasks_schema_time_idx, which serves a tenant's page, holds no ACTIVE rows
// (migration 028: a claim so writes one index entry less per task), so the
// page is read in two parts: the rows that are not ACTIVE, from that index
// when tenants are given, and the ACTIVE ones (a few per slot of every
// instance) from tasks_active_lease_idx, then merged. A status filter that
// leaves one part out reads the other only.
func (s *Store) ListTasks(ctx context.Context, f TaskFilter) ([]wftype.Task, error) {
	var statuses []string
	for _, st := range f.Statuses {
		statuses = append(statuses, string(st))
	}
	return queryAll(ctx, s.db, "listing tasks", ListTasksSQL(f.Statuses), scanTask, nilIfEmpty(statuses), nilIfEmpty(f.TaskTypes),
		nilIfEmpty(f.SchemaNames), f.From, f.To, f.AfterTime, f.AfterID, pageLimit(f.Limit))
}

// ListTasksSQL returns ListTasks' statement for a filter of these statuses
// (none: all), for EXPLAIN in tests. Its arguments are, in turn, the
// statuses, task types and tenants (each NULL for all), the creation time
// range, the keyset cursor (time and id) and the page size.
func ListTasksSQL(statuses []wftype.TaskStatus) string {
	const filters = `($1::text[] IS NULL OR status = ANY($1))
  AND ($2::text[] IS NULL OR task_type = ANY($2))
  AND ($3::text[] IS NULL OR schema_name = ANY($3))
  AND ($4::timestamptz IS NULL OR "timestamp" >= $4)
  AND ($5::timestamptz IS NULL OR "timestamp" < $5)
  AND ($6::timestamptz IS NULL OR ("timestamp", task_id) < ($6, $7::uuid))`
	part := func(status string) string {
		return `SELECT ` + taskColumns + `
FROM tasks.tasks
WHERE ` + status + `
  AND ` + filters + `
ORDER BY "timestamp" DESC, task_id DESC
LIMIT $8`
	}
	active, others := len(statuses) == 0, len(statuses) == 0
	for _, st := range statuses {
		active = active || st == wftype.StatusActive
		others = others || st != wftype.StatusActive
	}
	switch {
	case !active:
		return part(`status <> 'ACTIVE'`)
	case !others:
		return part(`status = 'ACTIVE'`)
	}
	return `SELECT * FROM ((` + part(`status <> 'ACTIVE'`) + `) UNION ALL (` + part(`status = 'ACTIVE'`) + `)) u
ORDER BY "timestamp" DESC, task_id DESC
LIMIT $8`
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// attemptHistorySQL is a task's attempt history (migration 024): its
// attempt_log with, for a task that ended, the attempt that ended it, which
// its columns hold. The columns are those of the row as it is before any
// change a statement makes (in an UPDATE's SET, the old row).
const attemptHistorySQL = `tasks.attempt_history(attempt_log, attempts, owner_id, started_at, finished_at, status, error)`

// RequeueTask puts a DEAD_LETTER, FAILED or CANCELLED task back to PENDING
// with its retries reset. It fails with ErrConflict when the task is live,
// when another live task now holds its dedup key, or when it is the task of
// a workflow step: its end was the step's, which the run has taken into
// account (failed the step, the run, or moved on), so running it again would
// act for a run that did not ask; a step is run again by retrying the run
// (a new task). The attempt that ended
// the task moves into its attempt_log in the same row write, since the
// columns that held it are cleared.
func (s *Store) RequeueTask(ctx context.Context, id uuid.UUID) (wftype.Task, error) {
	const q = `
WITH requeued AS (
    UPDATE tasks.tasks
    SET status = 'PENDING', retry_count = 0, run_after = now(), owner_id = NULL, locked_until = NULL,
        finished_at = NULL, error = NULL, attempt_log = ` + attemptHistorySQL + `
    WHERE task_id = $1 AND "timestamp" = $2 AND status IN ('DEAD_LETTER', 'FAILED', 'CANCELLED')
      AND workflow_run_id IS NULL
    RETURNING ` + taskColumns + `
),
notified AS (SELECT count(pg_notify($3, task_type)) AS n FROM requeued)
SELECT ` + taskColumns + ` FROM requeued, notified`
	t, err := scanTask(s.db.QueryRow(ctx, q, id, IDTime(id), s.channels.TaskQueued))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		var run *uuid.UUID
		const q = `SELECT workflow_run_id FROM tasks.tasks WHERE task_id = $1 AND "timestamp" = $2`
		if gerr := s.db.QueryRow(ctx, q, id, IDTime(id)).Scan(&run); errors.Is(gerr, pgx.ErrNoRows) {
			return t, fmt.Errorf("task %s: %w", id, wftype.ErrNotFound)
		} else if gerr != nil {
			return t, wrap("reading a task", gerr)
		}
		if run != nil {
			return t, fmt.Errorf("task %s is a step of workflow run %s: retry the run instead (wf workflows retry): %w",
				id, *run, wftype.ErrConflict)
		}
		return t, fmt.Errorf("task %s is not DEAD_LETTER, FAILED or CANCELLED: %w", id, wftype.ErrConflict)
	case IsUniqueViolation(err):
		return t, fmt.Errorf("task %s: another live task holds its dedup key: %w", id, wftype.ErrConflict)
	}
	return t, wrap("requeueing task", err)
}

// GetAttempts returns the attempt history of a task, oldest first: the last
// 20 attempts that ended (see migrations 006 and 024: the attempt that
// ended a task is read from its row). It fails with wftype.ErrNotFound for
// a task that does not exist.
func (s *Store) GetAttempts(ctx context.Context, id uuid.UUID) ([]wftype.Attempt, error) {
	const q = `SELECT coalesce(` + attemptHistorySQL + `, '[]') FROM tasks.tasks WHERE task_id = $1 AND "timestamp" = $2`
	var raw []byte
	err := s.db.QueryRow(ctx, q, id, IDTime(id)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("task %s: %w", id, wftype.ErrNotFound)
	}
	if err != nil {
		return nil, wrap("reading a task's attempts", err)
	}
	out := []wftype.Attempt{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("error decoding the attempt history of task %s: %w", id, err)
	}
	return out, nil
}
