package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// DefaultPendingSnapshotMaxAge is how old the PENDING counts snapshot may be
// before a reader of the overview refreshes it itself: three of the
// leader's refresh intervals (engine.DefaultOverviewInterval, 5s), so with a
// leader running readers never count, and without one (wf serve alone, a
// stopped daemon) the counts are never older than this.
const DefaultPendingSnapshotMaxAge = 15 * time.Second

// refreshPendingSnapshotSQL rewrites the one row of tasks.pending_snapshot
// (migration 017) with the PENDING counts by type and tenant, how many are
// due and the earliest due run_after, all as of $1 (NULL: the database's
// clock). The counting is the overview's old PENDING statement: one pass
// over tasks_claim_idx, an index-only scan wherever the visibility map
// allows (the tenant is an INCLUDE column, migration 009); it costs what
// the backlog costs (95 ms at 100,000 PENDING on a loaded machine), but it
// runs on the leader every few seconds, never per page view. A refresh
// older than the row's (a slow statement overtaken) changes nothing.
const refreshPendingSnapshotSQL = `
WITH now AS (SELECT coalesce($1::timestamptz, now()) AS at),
p AS (
    SELECT task_type, schema_name, count(*) AS pending,
           count(*) FILTER (WHERE run_after <= (SELECT at FROM now)) AS due,
           min(run_after) FILTER (WHERE run_after <= (SELECT at FROM now)) AS oldest_due_at
    FROM tasks.tasks WHERE status = 'PENDING'
    GROUP BY task_type, schema_name)
INSERT INTO tasks.pending_snapshot (singleton, taken_at, task_types, schema_names, pending, due, oldest_due_at)
SELECT true, (SELECT at FROM now),
       coalesce(array_agg(task_type ORDER BY task_type, schema_name), '{}'),
       coalesce(array_agg(schema_name ORDER BY task_type, schema_name), '{}'),
       coalesce(array_agg(pending ORDER BY task_type, schema_name), '{}'),
       coalesce(array_agg(due ORDER BY task_type, schema_name), '{}'),
       coalesce(array_agg(oldest_due_at ORDER BY task_type, schema_name), '{}')
FROM p
ON CONFLICT (singleton) DO UPDATE
SET taken_at = excluded.taken_at, task_types = excluded.task_types, schema_names = excluded.schema_names,
    pending = excluded.pending, due = excluded.due, oldest_due_at = excluded.oldest_due_at
WHERE tasks.pending_snapshot.taken_at <= excluded.taken_at
RETURNING taken_at`

// pendingSnapshotTakenSQL is when the snapshot was taken (no row: never).
const pendingSnapshotTakenSQL = `SELECT taken_at FROM tasks.pending_snapshot`

// pendingSnapshotStaleSQL says whether the snapshot is missing or older
// than $2 as of $1 (NULL: the database's clock).
const pendingSnapshotStaleSQL = `
SELECT coalesce((SELECT taken_at FROM tasks.pending_snapshot) < coalesce($1::timestamptz, now()) - $2::interval, true)`

// readPendingSnapshotSQL reads the snapshot's counts of the tenants $1
// (NULL: all): one row and its arrays, whatever the backlog. The LEFT JOIN
// keeps one row (NULL counts) when none of the tenants has a PENDING task,
// so the snapshot's time is known even then.
const readPendingSnapshotSQL = `
SELECT s.taken_at, x.task_type, x.schema_name, x.pending, x.due, x.oldest_due_at
FROM tasks.pending_snapshot s
LEFT JOIN LATERAL unnest(s.task_types, s.schema_names, s.pending, s.due, s.oldest_due_at)
    AS x(task_type, schema_name, pending, due, oldest_due_at)
    ON $1::text[] IS NULL OR x.schema_name = ANY($1)
ORDER BY x.task_type, x.schema_name`

// RefreshPendingSnapshot counts the PENDING tasks into the snapshot the
// overview reads, as of now (nil: the database's clock), and returns the
// snapshot's time.
func (s *Store) RefreshPendingSnapshot(ctx context.Context, now *time.Time) (time.Time, error) {
	var at time.Time
	err := s.db.QueryRow(ctx, refreshPendingSnapshotSQL, now).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		// A newer snapshot was written meanwhile: it stays.
		err = s.db.QueryRow(ctx, pendingSnapshotTakenSQL).Scan(&at)
	}
	return at.UTC(), wrap("refreshing the PENDING counts snapshot", err)
}

// freshenPendingSnapshot refreshes the PENDING counts snapshot when it is
// missing or older than maxAge as of now (nil: the database's clock): no
// leader is running, or it has fallen behind.
func (s *Store) freshenPendingSnapshot(ctx context.Context, now *time.Time, maxAge time.Duration) error {
	var stale bool
	err := s.db.QueryRow(ctx, pendingSnapshotStaleSQL, now, maxAge).Scan(&stale)
	if err != nil {
		return wrap("reading the PENDING counts snapshot's age", err)
	}
	if !stale {
		return nil
	}
	_, err = s.RefreshPendingSnapshot(ctx, now)
	return err
}

// readPendingSnapshot returns the snapshot's time, its PENDING counts of
// the tenants (nil: all), and the due ones' count and oldest due time
// where any was due when it was taken.
func readPendingSnapshot(ctx context.Context, tx pgx.Tx, tenants []string) (time.Time, []TaskCount, []PendingAge, error) {
	rows, err := tx.Query(ctx, readPendingSnapshotSQL, tenants)
	if err != nil {
		return time.Time{}, nil, nil, err
	}
	defer rows.Close()
	var taken time.Time
	var counts []TaskCount
	var ages []PendingAge
	for rows.Next() {
		var taskType, schema *string
		var pending, due *int64
		var oldest *time.Time
		if err := rows.Scan(&taken, &taskType, &schema, &pending, &due, &oldest); err != nil {
			return time.Time{}, nil, nil, err
		}
		if taskType == nil || schema == nil || pending == nil {
			continue // the snapshot holds none of these tenants' tasks
		}
		counts = append(counts, TaskCount{Status: wftype.StatusPending, TaskType: *taskType, SchemaName: *schema, Count: *pending})
		if due != nil && *due > 0 && oldest != nil {
			ages = append(ages, PendingAge{TaskType: *taskType, SchemaName: *schema, Due: *due, OldestDueAt: oldest.UTC()})
		}
	}
	return taken.UTC(), counts, ages, rows.Err()
}
