package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The statements of `wf bench chaos`: the faults it injects and the
// invariants it checks afterwards.

// LeaderBackend returns the process id of the server backend that holds a
// leadership lock (a granted advisory lock) for a session whose
// application_name matches appNameLike, and false when none does.
func (s *Store) LeaderBackend(ctx context.Context, appNameLike string) (int, bool, error) {
	const q = `
SELECT a.pid
FROM pg_stat_activity a
JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.granted
WHERE a.datname = current_database() AND a.application_name LIKE $1
LIMIT 1`
	var pid int
	err := s.db.QueryRow(ctx, q, appNameLike).Scan(&pid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return pid, err == nil, wrap("finding the leader's backend", err)
}

// TerminateBackend ends a server backend (pg_terminate_backend), as an
// operator or a failing network would, and reports whether it existed.
func (s *Store) TerminateBackend(ctx context.Context, pid int) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok)
	return ok, wrap("terminating a backend", err)
}

// LiveDuplicateKeys returns the dedup keys ("schema/key") held by more than
// one live (PENDING or ACTIVE) task: there must never be any.
func (s *Store) LiveDuplicateKeys(ctx context.Context) ([]string, error) {
	const q = `
SELECT schema_name || '/' || dedup_key
FROM tasks.tasks
WHERE status IN ('PENDING', 'ACTIVE') AND dedup_key IS NOT NULL
GROUP BY schema_name, dedup_key
HAVING count(*) > 1`
	rows, err := s.db.Query(ctx, q)
	if err != nil {
		return nil, wrap("looking for live duplicate dedup keys", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return keys, wrap("looking for live duplicate dedup keys", err)
}

// TaskStatuses returns the status of each of ids that exists.
func (s *Store) TaskStatuses(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	return queryMap[uuid.UUID, string](ctx, s.db, "reading task statuses", `SELECT task_id, status FROM tasks.tasks WHERE task_id = ANY($1)`, ids)
}

// Unsettled counts the tasks that are not COMPLETED and the events still in
// the outbox (any status).
func (s *Store) Unsettled(ctx context.Context) (tasks, events int, err error) {
	const q = `
SELECT (SELECT count(*) FROM tasks.tasks WHERE status <> 'COMPLETED'),
       (SELECT count(*) FROM tasks.events)`
	err = s.db.QueryRow(ctx, q).Scan(&tasks, &events)
	return tasks, events, wrap("counting unsettled tasks and events", err)
}

// UnsettledTasks describes up to limit tasks created before `before` that
// are not COMPLETED ("id type status retries: error").
func (s *Store) UnsettledTasks(ctx context.Context, before time.Time, limit int) ([]string, error) {
	const q = `
SELECT task_id::text || ' ' || task_type || ' ' || status || ' retries ' || retry_count || ': ' || coalesce(error, '')
FROM tasks.tasks WHERE status <> 'COMPLETED' AND "timestamp" < $1 ORDER BY "timestamp" LIMIT $2`
	rows, err := s.db.Query(ctx, q, before, limit)
	if err != nil {
		return nil, wrap("listing unsettled tasks", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, wrap("listing unsettled tasks", err)
}

// TasksPerInput counts the tasks of a type by the integer input field n.
func (s *Store) TasksPerInput(ctx context.Context, taskType string) (map[int64]int, error) {
	return queryMap[int64, int](ctx, s.db, "counting tasks by input", `SELECT (inputs->>'n')::bigint, count(*) FROM tasks.tasks WHERE task_type = $1 GROUP BY 1`, taskType)
}

// FiredTick is one recorded tick of a schedule and the status of its task.
type FiredTick struct {
	At         time.Time
	FiredAt    time.Time
	TaskID     *uuid.UUID
	TaskStatus *string
}

// FiredTicks returns the recorded ticks of a schedule, oldest first, each
// with its task's status.
func (s *Store) FiredTicks(ctx context.Context, schedule string) ([]FiredTick, error) {
	const q = `
SELECT s.tick, s.fired_at, s.task_id, t.status
FROM tasks.schedule_ticks s
LEFT JOIN tasks.tasks t ON t.task_id = s.task_id
WHERE s.schedule_name = $1
ORDER BY s.tick`
	return queryAll(ctx, s.db, "reading fired ticks", q, func(row pgx.Row) (FiredTick, error) {
		var f FiredTick
		err := row.Scan(&f.At, &f.FiredAt, &f.TaskID, &f.TaskStatus)
		f.At, f.FiredAt = f.At.UTC(), f.FiredAt.UTC()
		return f, err
	}, schedule)
}
