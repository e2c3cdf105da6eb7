package store_test

import (
	"fmt"
	"testing"

	"github.com/wfhq/wf/engine/store"
)

// BenchmarkInsertTasks inserts batches of 1,000, 10,000 and 100,000 new
// tasks through one statement (insertTasksSQL) and through COPY (what
// InsertTasks does from copyMinTasks on), without dedup keys and with a
// key of its own on every task; it reports tasks/s. Run it with
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
					b.ResetTimer()
					for n := 0; n < b.N; n++ {
						if _, err := bb.store.InsertTasksVia(bb.ctx, batches[n], viaCopy); err != nil {
							b.Fatal(err)
						}
					}
					reportPerTask(b, size)
					b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "tasks/s")
				})
			}
		}
	}
}
