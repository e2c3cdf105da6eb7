package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// ExpiredLeases returns ACTIVE tasks whose lease ended before now (their
// instance died or stalled), at most limit, locking them (SKIP LOCKED) for the
// caller's transaction so two janitors never decide on the same task.
//
// It locks in the order every change of a step task uses, the workflow runs
// first, then the tasks (a run's failure and a cancel by hand do; the other
// order deadlocks with them): it finds the first limit expired tasks without
// locking them, locks their runs, and then takes only those tasks, skipping
// the ones another transaction holds. So it never holds a task whose run it
// has not locked (taking, past a held task, one further down whose run it
// had not locked made FinishTasks lock that run after its task). The runs of
// tasks it skips stay locked until the transaction ends, which only delays
// those runs' next change; the skipped tasks are found again next time.
//
// found is how many expired tasks it found before locking: a caller that
// drains in batches goes on while found is limit (there may be more), even
// when it got fewer tasks because another transaction held some.
func (s *Store) ExpiredLeases(ctx context.Context, now *time.Time, limit int) (expired []wftype.Task, found int, err error) {
	ids, err := collectIDs(ctx, s, "finding expired leases", `
SELECT task_id FROM tasks.tasks
WHERE status = 'ACTIVE' AND locked_until < coalesce($1::timestamptz, now())
ORDER BY locked_until
LIMIT $2`, now, limit)
	if err != nil || len(ids) == 0 {
		return nil, 0, err
	}
	keys, lo, hi := idKeys(ids)
	if err := s.lockRunsOfTasks(ctx, keys, lo, hi); err != nil {
		return nil, len(ids), err
	}
	// The lease is tested again on the locked row: one renewed or finished
	// meanwhile is left alone. The creation-time range prunes partitions.
	const q = `
SELECT ` + taskColumns + `
FROM tasks.tasks
WHERE task_id = ANY (ARRAY(SELECT unnest($2::uuid[])))
  AND "timestamp" BETWEEN $3 AND $4
  AND status = 'ACTIVE' AND locked_until < coalesce($1::timestamptz, now())
ORDER BY locked_until
FOR UPDATE SKIP LOCKED`
	expired, err = queryAll(ctx, s.db, "locking expired leases", q, scanTask, now, keys, lo, hi)
	return expired, len(ids), err
}

// DeadLetterOrphans moves PENDING and ACTIVE tasks whose tenant no longer
// exists in catalog.catalogs (other than "system") to DEAD_LETTER, writing a
// task.dead_lettered event for each, and returns how many it moved. A
// running one is told to stop (its instance hears "CANCELLED:<id>" on the
// status channel, as for a cancel by hand). The tasks of workflow steps
// end their steps as any end does (stepEnds): with a step hook, their runs
// fail in the same transaction, and a run's failure cancels its other
// PENDING tasks; without one, the ends are recorded for a step pass.
func (s *Store) DeadLetterOrphans(ctx context.Context, limit int) (int, error) {
	if s.catalog != nil {
		return s.deadLetterOrphansApart(ctx, limit)
	}
	return s.deadLetterOrphansWhere(ctx, limit,
		`NOT EXISTS (SELECT 1 FROM catalog.catalogs c WHERE c.schema_name = t.schema_name)`)
}

// deadLetterOrphansWhere dead-letters at most limit live tasks of tenants
// other than "system" for which cond, a condition on t (tasks.tasks) over
// args ($2 on), holds, in one transaction: it finds them, locks the
// workflow runs of those that are steps (the runs first, then their tasks:
// the order of a run's failure and of a cancel by hand), dead-letters those
// still live and not held by another transaction (deadLetterOrphansSQL) and
// hands the ends of the steps among them on (stepEnds). It returns how many
// it moved.
func (s *Store) deadLetterOrphansWhere(ctx context.Context, limit int, cond string, args ...any) (int, error) {
	if !s.inTx {
		return inTxValue(ctx, s, func(tx *Store) (int, error) { return tx.deadLetterOrphansWhere(ctx, limit, cond, args...) })
	}
	ids, err := collectIDs(ctx, s, "finding orphaned tasks", `
SELECT t.task_id
FROM tasks.tasks t
WHERE t.status IN ('PENDING', 'ACTIVE')
  AND t.schema_name <> 'system'
  AND `+cond+`
LIMIT $1`, append([]any{limit}, args...)...)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	keys, lo, hi := idKeys(ids)
	if err := s.lockRunsOfTasks(ctx, keys, lo, hi); err != nil {
		return 0, err
	}
	// $1: the ids found, cond's args from $2, then the range of their
	// creation times (which prunes the partitions) and the status channel.
	n := len(args) + 2
	q := fmt.Sprintf(deadLetterOrphansSQL, cond, n, n+1, n+2)
	rows, err := s.db.Query(ctx, q, append(append([]any{keys}, args...), lo, hi, s.channels.TaskStatusChanged)...)
	if err != nil {
		return 0, wrap("dead-lettering orphaned tasks", err)
	}
	moved, steps, err := scanFinished(rows, len(ids))
	if err != nil {
		return 0, wrap("dead-lettering orphaned tasks", err)
	}
	if err := s.stepEnds(ctx, steps); err != nil {
		return 0, err
	}
	return len(moved), nil
}

// deadLetterOrphansSQL dead-letters the tasks among $1 (created within
// [%[2]d, %[3]d]: fmt verbs for the parameters' numbers) that are still
// live and orphaned (the condition %[1]s over t, tested again on the row
// locked) and not held by another transaction, and writes a
// task.dead_lettered event for each, naming the task as its source; the
// task's record of emitted events (migration 021) gains the event in the
// same row write. stamped gives each orphan its event's id and time once,
// for both writes. The ACTIVE ones are announced on the status channel
// (%[4]d) as "CANCELLED:<id>", so that the instance running one stops it
// now rather than at its next heartbeat. The result has scanFinished's
// columns.
const deadLetterOrphansSQL = `
WITH orphans AS (
    SELECT t.task_id, t."timestamp", t.status
    FROM tasks.tasks t
    WHERE t.task_id = ANY (ARRAY(SELECT unnest($1::uuid[])))
      AND t."timestamp" BETWEEN $%[2]d AND $%[3]d
      AND (t.status IN ('PENDING', 'ACTIVE')) IS TRUE
      AND t.schema_name <> 'system'
      AND %[1]s
    FOR UPDATE SKIP LOCKED
),
stamped AS (
    SELECT o.task_id, o."timestamp", o.status AS was, tasks.uuid_v7(e.at) AS event_id, e.at AS event_at
    FROM orphans o CROSS JOIN LATERAL (SELECT date_trunc('milliseconds', clock_timestamp()) AS at) e
),
moved AS (
    UPDATE tasks.tasks t
    SET status = 'DEAD_LETTER', finished_at = now(), locked_until = NULL,
        error = 'tenant ' || t.schema_name || ' no longer exists',
        emitted_events = tasks.append_emitted(t.emitted_events, jsonb_build_array(jsonb_build_object(
            'event_id', s.event_id, 'event_type', 'task.dead_lettered', 'created_at', s.event_at)))
    FROM stamped s
    WHERE t.task_id = s.task_id AND t."timestamp" = s."timestamp"
    RETURNING t.task_id, t.task_type, t.schema_name, t.error, t.retry_count, t.attempts, s.event_id, s.event_at, s.was,
              t.workflow_run_id, t.workflow_step, t.workflow_item
),
events AS (
    INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, payload, source_task_id)
    SELECT m.event_id, m.event_at, 'task.dead_lettered', 'CATALOG', m.schema_name,
           jsonb_build_object('task_id', m.task_id, 'task_type', m.task_type, 'status', 'DEAD_LETTER',
                              'error', m.error, 'retry_count', m.retry_count, 'attempts', m.attempts),
           m.task_id
    FROM moved m
),
notified AS (SELECT count(pg_notify($%[4]d, 'CANCELLED:' || task_id::text)) AS n FROM moved WHERE was = 'ACTIVE')
SELECT m.task_id, m.workflow_run_id, m.workflow_step, m.workflow_item, 'DEAD_LETTER', NULL::jsonb, m.error
FROM moved m, notified`

// orphanSkew is how much older than the registry's reading a task must be
// for deadLetterOrphansApart to take it for an orphan: more than the clocks
// of wf's hosts and its databases are apart.
const orphanSkew = time.Minute

// deadLetterOrphansApart is DeadLetterOrphans with the registry in another
// database (WithCatalog), where no statement can join the two. It reads the
// queue's clock, then every tenant the registry holds, then dead-letters
// the live tasks of other tenants that are older than that reading (less
// orphanSkew): a tenant registered after the reading has no task that old,
// so its tasks are never taken for orphans. Tenants are few (one per
// catalog): the list goes into the statement as an array.
func (s *Store) deadLetterOrphansApart(ctx context.Context, limit int) (int, error) {
	var now time.Time
	if err := s.db.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return 0, wrap("reading the queue's clock", err)
	}
	tenants, err := queryAll(ctx, s.catalog.db, "listing tenants", `SELECT schema_name FROM catalog.catalogs`,
		func(row pgx.Row) (string, error) {
			var name string
			return name, row.Scan(&name)
		})
	if err != nil {
		return 0, err
	}
	if tenants == nil {
		tenants = []string{}
	}
	return s.deadLetterOrphansWhere(ctx, limit, `t.schema_name <> ALL ($2::text[]) AND t."timestamp" < $3`,
		tenants, now.Add(-orphanSkew))
}
