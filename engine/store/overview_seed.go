package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// The statements below serve the overview's benchmarks (`wf bench overview`
// and BenchmarkOverview): they seed a table the size of a busy queue's and
// time each overview statement as ReadOverview runs it. None of them is on
// the engine's hot path.

// seedOverviewRows are the rows an overview seed writes: $1 tasks, the g-th
// created g × $2 before $3 (wrapping after 30 days), of 10 task types
// (type_0…type_9) and 20 tenants (s_t0…s_t19). With $3 one second,
// 5,000,000 COMPLETED tasks cover the 30 days before $3 and 3,600 of every
// 86,400 fall in its last hour. The span and the insert below read the
// same rows, so the partitions ensured are those of the rows written.
const seedOverviewRows = `
FROM generate_series(1, $1::int) g,
     LATERAL (SELECT date_trunc('milliseconds', $3::timestamptz - (g % (30 * 86400)) * $2::interval) AS ts) x`

// seedOverviewSpanSQL reads the oldest and newest creation time of the rows
// seedOverviewSQL writes with the same first three arguments.
const seedOverviewSpanSQL = `SELECT min(x.ts), max(x.ts)` + seedOverviewRows

// seedOverviewSQL inserts the rows of seedOverviewRows with status $4
// ('PENDING' leaves finished_at NULL).
const seedOverviewSQL = `
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, inputs,
                         run_after, started_at, finished_at, attempts)
SELECT tasks.uuid_v7(x.ts), x.ts, 's_t' || (g % 20), 'CATALOG', 'ASYNCHRONOUS', 'type_' || (g % 10), $4::text, '{}',
       x.ts, x.ts, CASE WHEN $4::text = 'PENDING' THEN NULL ELSE x.ts + interval '1 second' END, 1` + seedOverviewRows

// seedOverviewChunk bounds the rows one seeding INSERT writes.
const seedOverviewChunk = 500_000

// SeedOverviewTasks inserts n tasks of a status for an overview benchmark,
// created every apart going back from now (see seedOverviewRows), in
// INSERTs of at most 500,000 rows. Before each INSERT it reads the oldest
// and newest time of the rows that INSERT writes and ensures the partitions
// of that span, so it writes on any date.
//
//wf:dated
func (s *Store) SeedOverviewTasks(ctx context.Context, status wftype.TaskStatus, n int, every time.Duration, now time.Time) error {
	for done := 0; done < n; done += seedOverviewChunk {
		k := min(seedOverviewChunk, n-done)
		var oldest, newest time.Time
		if err := s.db.QueryRow(ctx, seedOverviewSpanSQL, k, every, now).Scan(&oldest, &newest); err != nil {
			return wrap(fmt.Sprintf("reading the span of %d %s tasks to seed", k, status), err)
		}
		if _, err := s.EnsurePartitionsSpan(ctx, oldest, newest); err != nil {
			return err
		}
		if _, err := s.db.Exec(ctx, seedOverviewSQL, k, every, now, string(status)); err != nil {
			return wrap(fmt.Sprintf("seeding %d %s tasks", k, status), err)
		}
	}
	return nil
}

// overviewArgs are the arguments of an overview statement (OverviewSQL) for
// the tenants (nil: all) as of now, over the last hour.
func overviewArgs(name string, tenants []string, now time.Time) ([]any, error) {
	since := now.Add(-time.Hour)
	switch name {
	case "counts", "throughput":
		return []any{tenants, since}, nil
	case "pending":
		return []any{tenants}, nil
	case "pending_refresh":
		return []any{now}, nil
	case "instances", "outbox":
		return nil, nil
	}
	return nil, fmt.Errorf("no overview statement named %q", name)
}

// RunOverviewStatement runs one overview statement (a name of OverviewSQL)
// for the tenants (nil: all) as of now, as ReadOverview runs it (sequential
// scans and JIT off), reading every row, in a transaction it rolls back; with
// explain, under EXPLAIN (ANALYZE, BUFFERS), returning the plan. It returns
// how long the statement took from sending it to its last row.
func (s *Store) RunOverviewStatement(ctx context.Context, name string, tenants []string, now time.Time, explain bool) (time.Duration, string, error) {
	q, ok := OverviewSQL()[name]
	if !ok {
		return 0, "", fmt.Errorf("error running an overview statement: no statement named %q", name)
	}
	args, err := overviewArgs(name, tenants, now)
	if err != nil {
		return 0, "", err
	}
	if explain {
		q = "EXPLAIN (ANALYZE, BUFFERS) " + q
	}
	var took time.Duration
	var lines []string
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, overviewSettingsSQL); err != nil {
			return err
		}
		began := time.Now()
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if explain {
				var line string
				if err := rows.Scan(&line); err != nil {
					rows.Close()
					return err
				}
				lines = append(lines, line)
			}
		}
		rows.Close()
		took = time.Since(began)
		if err := rows.Err(); err != nil {
			return err
		}
		return errRollback
	})
	if err != nil && !errors.Is(err, errRollback) {
		return 0, "", wrap("running the overview statement "+name, err)
	}
	return took, strings.Join(lines, "\n"), nil
}
