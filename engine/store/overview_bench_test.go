package store_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
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
	seededAt := clock.Now()
	for _, step := range []struct {
		n      int
		status wftype.TaskStatus
		every  time.Duration
	}{{finished, wftype.StatusCompleted, time.Second}, {pending, wftype.StatusPending, time.Millisecond}, {1000, wftype.StatusDeadLetter, time.Hour}} {
		if err := bb.store.SeedOverviewTasks(bb.ctx, step.status, step.n, step.every, seededAt); err != nil {
			b.Fatal(err)
		}
	}
	if err := bb.store.VacuumAnalyzeTasks(bb.ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := bb.store.RefreshPendingSnapshot(bb.ctx, nil); err != nil {
		b.Fatal(err)
	}
	now := clock.Now()
	for name := range store.OverviewSQL() {
		b.Run(name, func(b *testing.B) {
			_, plan, err := bb.store.RunOverviewStatement(bb.ctx, name, nil, now, true)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("EXPLAIN (ANALYZE, BUFFERS) %s:\n%s", name, plan)
			for range b.N {
				if _, _, err := bb.store.RunOverviewStatement(bb.ctx, name, nil, now, false); err != nil {
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
