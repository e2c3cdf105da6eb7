package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/proccpu"
)

// BenchmarkInsertTasks inserts batches of 1,000, 10,000 and 100,000 new
// tasks through one statement (insertTasksSQL) and through COPY (what
// InsertTasks does from copyMinTasks on), without dedup keys and with a
// key of its own on every task; it reports tasks/s and the CPU per task of
// the benchmark's process (the store's Go side) and of the database's
// backends (when the server runs on this machine), which a loaded machine
// leaves steadier than the time. Run it with
//
//	go run ./internal/dbtest/withdb -- go test -run '^$' -bench InsertTasks -benchtime 5x ./engine/store/
func BenchmarkInsertTasks(b *testing.B) {
	for _, size := range []int{1000, 10_000, 100_000} {
		for _, keyed := range []bool{false, true} {
			for _, viaCopy := range []bool{false, true} {
				how := "statement"
				if viaCopy {
					how = "copy"
				}
				b.Run(fmt.Sprintf("size=%d/keys=%t/%s", size, keyed, how), func(b *testing.B) {
					bb := setupBench(b)
					batches := make([][]store.NewTask, b.N)
					for n := range batches {
						batch := make([]store.NewTask, size)
						for i := range batch {
							batch[i] = newTask("noop")
							if keyed {
								batch[i].DedupKey = fmt.Sprintf("k-%d-%d", n, i)
							}
						}
						batches[n] = batch
					}
					self, server := proccpu.Self().CPU(), backendsCPU(b, bb)
					b.ResetTimer()
					for n := 0; n < b.N; n++ {
						if _, err := bb.store.InsertTasksVia(bb.ctx, batches[n], viaCopy); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					perTask := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N*size) }
					b.ReportMetric(perTask(proccpu.Self().CPU()-self), "µs-go-cpu/task")
					b.ReportMetric(perTask(backendsCPU(b, bb)-server), "µs-pg-cpu/task")
					reportPerTask(b, size)
					b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "tasks/s")
				})
			}
		}
	}
}

// BenchmarkInsertTenantIndex is what the index of fair claiming
// (tasks_tenant_claim_idx, migration 016) costs an enqueue: batches of 100
// (one statement) and of 5,000 (COPY), of one tenant or spread over five,
// go alternately to a database with
// the index and to one without it, so both meet the same load; it reports
// µs per task of each and their ratio. The index is there whether fairness
// is on or off (fairness.enabled only changes the claim).
func BenchmarkInsertTenantIndex(b *testing.B) {
	for _, bench := range []struct{ size, tenants int }{{100, 5}, {5000, 1}, {5000, 5}} {
		size := bench.size
		b.Run(fmt.Sprintf("size=%d/tenants=%d", size, bench.tenants), func(b *testing.B) {
			with, without := setupBench(b), setupBench(b)
			if _, err := without.store.DB().Exec(without.ctx, `DROP INDEX tasks.tasks_tenant_claim_idx`); err != nil {
				b.Fatal(err)
			}
			var took [2]time.Duration
			insert := func(i int) {
				bb := []*benchBundle{with, without}[i]
				batch := make([]store.NewTask, size)
				for j := range batch {
					batch[j] = newTask("noop")
					batch[j].SchemaName = fmt.Sprintf("tenant_%d", j%bench.tenants)
				}
				start := time.Now()
				if _, err := bb.store.InsertTasks(bb.ctx, batch); err != nil {
					b.Fatal(err)
				}
				took[i] += time.Since(start)
			}
			insert(0) // warm up each pool's connections and statements
			insert(1)
			took = [2]time.Duration{}
			for n := 0; n < b.N; n++ {
				insert(n % 2) // which goes first alternates
				insert(1 - n%2)
			}
			perTask := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*size) }
			b.ReportMetric(perTask(took[0]), "µs/task-with")
			b.ReportMetric(perTask(took[1]), "µs/task-without")
			b.ReportMetric(float64(took[0])/float64(took[1]), "with/without")
		})
	}
}

// backendsCPU is the CPU time the backends of the bench's database have
// used (0 when the server is not on this machine): each backend's own, from
// /proc.
func backendsCPU(b *testing.B, bb *benchBundle) time.Duration {
	b.Helper()
	rows, err := bb.store.DB().Query(bb.ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var sum time.Duration
	for _, pid := range pids {
		sum += proccpu.TreeCPU(int(pid))
	}
	return sum
}
