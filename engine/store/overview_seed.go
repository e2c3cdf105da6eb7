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

// seedOverviewSQL inserts $1 tasks of status $2 ('PENDING' leaves
// finished_at NULL), the g-th created g × $3 before now (wrapping after 30
// days), of 10 task types (type_0…type_9) and 20 tenants (s_t0…s_t19). With
// $3 one second, 5,000,000 COMPLETED tasks cover the last 30 days and
// 3,600 of every 86,400 fall in the last hour.
const seedOverviewSQL = `
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, inputs,
                         run_after, started_at, finished_at, attempts)
SELECT tasks.uuid_v7(x.ts), x.ts, 's_t' || (g % 20), 'CATALOG', 'ASYNCHRONOUS', 'type_' || (g % 10), $2::text, '{}',
       x.ts, x.ts, CASE WHEN $2::text = 'PENDING' THEN NULL ELSE x.ts + interval '1 second' END, 1
FROM generate_series(1, $1::int) g,
     LATERAL (SELECT date_trunc('milliseconds', now() - (g % (30 * 86400)) * $3::interval) AS ts) x`

// seedOverviewChunk bounds the rows one seeding INSERT writes.
const seedOverviewChunk = 500_000

// SeedOverviewTasks inserts n tasks of a status for an overview benchmark
// (see seedOverviewSQL), in INSERTs of at most 500,000 rows. The partitions
// of the last 31 days must exist.
func (s *Store) SeedOverviewTasks(ctx context.Context, status wftype.TaskStatus, n int, every time.Duration) error {
	for done := 0; done < n; done += seedOverviewChunk {
		k := min(seedOverviewChunk, n-done)
		if _, err := s.db.Exec(ctx, seedOverviewSQL, k, string(status), every); err != nil {
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
