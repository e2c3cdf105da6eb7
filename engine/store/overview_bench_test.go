package store_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
)

// envInt reads a size from the environment, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkOverview times each statement of the dashboard's overview (and
// the whole ReadOverview) on a table of WF_BENCH_OVERVIEW_FINISHED finished
// tasks (default 200,000; BENCHMARKS.md uses 5,000,000) spread over the
// last 30 days, WF_BENCH_OVERVIEW_PENDING PENDING ones (default 20,000;
// BENCHMARKS.md 100,000), 1,000 dead letters, 10 task types and 20 tenants,
// vacuumed and analysed as autovacuum would (so the visibility map lets the
// PENDING counts read tasks_claim_idx alone). The target is each statement
// under 50 ms.
func BenchmarkOverview(b *testing.B) {
	bb := setupBench(b)
	finished := envInt("WF_BENCH_OVERVIEW_FINISHED", 200_000)
	pending := envInt("WF_BENCH_OVERVIEW_PENDING", 20_000)
	db := bb.store.DB()
	if _, err := bb.store.EnsurePartitions(bb.ctx, clock.Now().AddDate(0, 0, -40), 3); err != nil {
		b.Fatal(err)
	}
	const insert = `
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, inputs,
                         run_after, started_at, finished_at, attempts)
SELECT tasks.uuid_v7(x.ts), x.ts, 's_t' || (g % 20), 'CATALOG', 'ASYNCHRONOUS', 'type_' || (g % 10), $2::text, '{}',
       x.ts, x.ts, CASE WHEN $2::text = 'PENDING' THEN NULL ELSE x.ts + interval '1 second' END, 1
FROM generate_series(1, $1::int) g,
     LATERAL (SELECT date_trunc('milliseconds', now() - (g % (30 * 86400)) * $3::interval) AS ts) x`
	for _, step := range []struct {
		n      int
		status string
		every  string
	}{{finished, "COMPLETED", "1 second"}, {pending, "PENDING", "1 millisecond"}, {1000, "DEAD_LETTER", "1 hour"}} {
		for done := 0; done < step.n; done += 500_000 {
			if _, err := db.Exec(bb.ctx, insert, min(500_000, step.n-done), step.status, step.every); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := db.Exec(bb.ctx, `VACUUM ANALYZE tasks.tasks`); err != nil {
		b.Fatal(err)
	}
	now := clock.Now()
	since := now.Add(-time.Hour)
	var none []string
	args := map[string][]any{
		"counts": {none, since}, "throughput": {none, since}, "pending": {none, now}, "instances": nil, "outbox": nil,
	}
	for name, q := range store.OverviewSQL() {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				// As ReadOverview runs them (see its comment on
				// sequential scans).
				tx, err := db.Begin(bb.ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Exec(bb.ctx, `SET LOCAL enable_seqscan = off`); err != nil {
					b.Fatal(err)
				}
				rows, err := tx.Query(bb.ctx, q, args[name]...)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				rows.Close()
				if err := tx.Rollback(bb.ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/statement")
		})
	}
	b.Run("ReadOverview", func(b *testing.B) {
		for range b.N {
			if _, err := bb.store.ReadOverview(bb.ctx, store.OverviewParams{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/overview")
	})
}
