package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The statements below serve `wf bench` (cli/bench): they read the
// server's counters and settings, time tasks from their rows, and build the
// history a scale check needs. None of them is on the engine's hot path.

// DatabaseCommits returns pg_stat_database.xact_commit of the current
// database: every committed transaction, read-only ones included. A backend
// publishes its counts when it goes idle (at most once a second) and when it
// disconnects, so read it after the connections being measured are closed.
func (s *Store) DatabaseCommits(ctx context.Context) (int64, error) {
	const q = `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`
	var n int64
	err := s.db.QueryRow(ctx, q).Scan(&n)
	return n, wrap("reading the commit counter", err)
}

// ServerSettings returns the current value of each named setting, with its
// unit ("128MB", "on"); unknown names are left out.
func (s *Store) ServerSettings(ctx context.Context, names []string) (map[string]string, error) {
	const q = `SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1::text[])`
	return queryMap[string, string](ctx, s.db, "reading server settings", q, names)
}

// ServerVersion returns the server's version line (SELECT version()).
func (s *Store) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := s.db.QueryRow(ctx, `SELECT version()`).Scan(&v)
	return v, wrap("reading the server version", err)
}

// CreateDatabase creates an empty database. It runs outside any transaction
// (on a connection or pool of the server's maintenance database).
func (s *Store) CreateDatabase(ctx context.Context, name string) error {
	_, err := s.db.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return wrap("creating database "+name, err)
}

// DropDatabase drops a database, ending the sessions still connected to it.
func (s *Store) DropDatabase(ctx context.Context, name string) error {
	_, err := s.db.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return wrap("dropping database "+name, err)
}

// Backlog is how many tasks of a type wait or run.
type Backlog struct {
	Pending int
	Active  int
}

// TaskBacklog counts the PENDING and ACTIVE tasks of a type from the partial
// indexes on those statuses.
func (s *Store) TaskBacklog(ctx context.Context, taskType string) (Backlog, error) {
	const q = `
SELECT count(*) FILTER (WHERE status = 'PENDING'), count(*) FILTER (WHERE status = 'ACTIVE')
FROM tasks.tasks
WHERE status IN ('PENDING', 'ACTIVE') AND task_type = $1`
	var b Backlog
	err := s.db.QueryRow(ctx, q, taskType).Scan(&b.Pending, &b.Active)
	return b, wrap("counting the backlog", err)
}

// HasUnfinished reports whether any task of a type is PENDING or ACTIVE. It
// stops at the first such row, so it stays cheap on a large backlog.
func (s *Store) HasUnfinished(ctx context.Context, taskType string) (bool, error) {
	const q = `
SELECT EXISTS (SELECT 1 FROM tasks.tasks WHERE status = 'PENDING' AND task_type = $1)
    OR EXISTS (SELECT 1 FROM tasks.tasks WHERE status = 'ACTIVE' AND task_type = $1)`
	var ok bool
	err := s.db.QueryRow(ctx, q, taskType).Scan(&ok)
	return ok, wrap("looking for unfinished tasks", err)
}

// CompletionWindow is when the COMPLETED tasks of a type ran.
type CompletionWindow struct {
	Completed     int
	FirstStarted  time.Time
	LastFinished  time.Time
	FirstFinished time.Time
}

// TaskCompletionWindow returns how many tasks of a type COMPLETED, the first
// claim and the last completion (the database's clock, statement start).
func (s *Store) TaskCompletionWindow(ctx context.Context, taskType string) (CompletionWindow, error) {
	const q = `
SELECT count(*), coalesce(min(started_at), now()), coalesce(max(finished_at), now()), coalesce(min(finished_at), now())
FROM tasks.tasks
WHERE task_type = $1 AND status = 'COMPLETED'`
	var w CompletionWindow
	err := s.db.QueryRow(ctx, q, taskType).Scan(&w.Completed, &w.FirstStarted, &w.LastFinished, &w.FirstFinished)
	return w, wrap("reading the completion window", err)
}

// TaskTiming is when one task was created, claimed and finished.
type TaskTiming struct {
	ID         uuid.UUID
	SchemaName string
	Created    time.Time
	StartedAt  time.Time
	FinishedAt time.Time
}

// CompletedTimings returns the timing of every COMPLETED task of a type.
func (s *Store) CompletedTimings(ctx context.Context, taskType string) ([]TaskTiming, error) {
	const q = `
SELECT task_id, schema_name, "timestamp", started_at, finished_at
FROM tasks.tasks
WHERE task_type = $1 AND status = 'COMPLETED'`
	return queryAll(ctx, s.db, "reading task timings", q, func(row pgx.Row) (TaskTiming, error) {
		var t TaskTiming
		err := row.Scan(&t.ID, &t.SchemaName, &t.Created, &t.StartedAt, &t.FinishedAt)
		return t, err
	}, taskType)
}

// InsertFinishedTasks writes n COMPLETED tasks of a type, created evenly
// between from and to, in one INSERT … SELECT generate_series (history for a
// scale check), after ensuring the partitions of that range. Their ids are
// UUIDv7 carrying their creation time, as the engine's are.
//
//wf:dated
func (s *Store) InsertFinishedTasks(ctx context.Context, taskType string, from, to time.Time, n int) error {
	const q = `
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status,
                         inputs, outputs, attempts, owner_id, run_after, started_at, finished_at, last_heartbeat_at)
SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                                      PLACING substring(int8send(floor(extract(epoch FROM g.ts) * 1000)::bigint) FROM 3)
                                      FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid,
       g.ts, 'system', 'SYSTEM', 'ASYNCHRONOUS', $1, 'COMPLETED',
       '{}', NULL, 1, 'bench-history', g.ts, g.ts, g.ts + interval '5 ms', g.ts
FROM (SELECT date_trunc('milliseconds', $2::timestamptz + (($3::timestamptz - $2::timestamptz) * i / $4)) AS ts
      FROM generate_series(0, $4 - 1) AS i) g`
	if n <= 0 {
		return nil
	}
	if _, err := s.EnsurePartitionsSpan(ctx, from, to); err != nil {
		return err
	}
	_, err := s.db.Exec(ctx, q, taskType, from, to, n)
	return wrap(fmt.Sprintf("inserting %d finished tasks", n), err)
}

// VacuumAnalyzeTasks runs VACUUM (ANALYZE) on the task table and its
// partitions, as autovacuum would after a bulk load.
func (s *Store) VacuumAnalyzeTasks(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `VACUUM (ANALYZE) tasks.tasks`)
	return wrap("vacuuming tasks", err)
}

// ExplainClaim runs the claim statement under EXPLAIN (ANALYZE, BUFFERS) in a
// transaction it rolls back, and returns the plan as text.
func (s *Store) ExplainClaim(ctx context.Context, p ClaimParams) (string, error) {
	args, ok := claimArgs(p)
	if !ok {
		return "", nil
	}
	var lines []string
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+claimTasksSQL, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			lines = append(lines, line)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return errRollback
	})
	if err != nil && err != errRollback {
		return "", wrap("explaining the claim", err)
	}
	return strings.Join(lines, "\n"), nil
}

var errRollback = fmt.Errorf("rollback")

// StatementStat is one line of pg_stat_statements.
type StatementStat struct {
	Query      string
	Calls      int64
	TotalMs    float64
	MeanMs     float64
	Rows       int64
	SharedHit  int64
	SharedRead int64
	WALBytes   int64
	Plans      int64
	PlanMs     float64
}

// Checkpoint forces a checkpoint (CHECKPOINT needs a superuser, or the
// pg_checkpoint role from PostgreSQL 15). A benchmark takes one before each
// measured run, so that no run pays for the full-page writes of a checkpoint
// that the WAL of the runs before it set off.
func (s *Store) Checkpoint(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `CHECKPOINT`)
	return wrap("forcing a checkpoint", err)
}

// EnableStatementStats creates the pg_stat_statements extension (the server
// must preload it) and resets its counters.
func (s *Store) EnableStatementStats(ctx context.Context) error {
	if _, err := s.db.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return wrap("enabling pg_stat_statements", err)
	}
	_, err := s.db.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	return wrap("resetting pg_stat_statements", err)
}

// TopStatements returns the statements of the current database that took
// the most execution time since the last reset.
func (s *Store) TopStatements(ctx context.Context, limit int) ([]StatementStat, error) {
	const q = `
SELECT query, calls, total_exec_time, mean_exec_time, rows, shared_blks_hit, shared_blks_read, wal_bytes::bigint,
       plans, total_plan_time
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY total_exec_time DESC
LIMIT $1`
	return queryAll(ctx, s.db, "reading pg_stat_statements", q, func(row pgx.Row) (StatementStat, error) {
		var st StatementStat
		err := row.Scan(&st.Query, &st.Calls, &st.TotalMs, &st.MeanMs, &st.Rows, &st.SharedHit, &st.SharedRead, &st.WALBytes,
			&st.Plans, &st.PlanMs)
		return st, err
	}, limit)
}

// SetDatabaseSetting sets a per-database default for new sessions (ALTER
// DATABASE current SET name = value); the bench turns statement logging on
// this way to count an idle instance's queries.
func (s *Store) SetDatabaseSetting(ctx context.Context, name, value string) error {
	var db string
	if err := s.db.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		return wrap("reading the database name", err)
	}
	q := fmt.Sprintf("ALTER DATABASE %s SET %s = %s", pgx.Identifier{db}.Sanitize(), pgx.Identifier{name}.Sanitize(),
		"'"+strings.ReplaceAll(value, "'", "''")+"'")
	_, err := s.db.Exec(ctx, q)
	return wrap("setting "+name, err)
}

// CountSessions counts the sessions on the current database whose
// application_name matches a LIKE pattern (wf instances name their election
// connection "wf-leader:<service>:<owner>").
func (s *Store) CountSessions(ctx context.Context, appNameLike string) (int, error) {
	const q = `
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND application_name LIKE $1`
	var n int
	err := s.db.QueryRow(ctx, q, appNameLike).Scan(&n)
	return n, wrap("counting sessions", err)
}

// DeleteUnfinishedTasks deletes the PENDING and ACTIVE tasks of a type.
func (s *Store) DeleteUnfinishedTasks(ctx context.Context, taskType string) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM tasks.tasks WHERE task_type = $1 AND status IN ('PENDING', 'ACTIVE')`, taskType)
	if err != nil {
		return 0, wrap("deleting unfinished tasks", err)
	}
	return tag.RowsAffected(), nil
}
