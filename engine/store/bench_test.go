package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// The hot paths of the engine, one statement each: claim, batch completion
// and heartbeat. Run them with
//
//	go run ./engine/dbtest/withdb -- go test -run '^$' -bench . ./engine/store/
//
// They report µs per task next to ns/op (one op is one statement). The test
// server is not durable (fsync off), so they measure the statements' CPU,
// not commit latency; `wf bench` measures the whole engine on a durable one.

type benchBundle struct {
	ctx   context.Context
	store *store.Store
	fair  *store.Fairness // claims share batches among tenants (nil: off)
}

func setupBench(b *testing.B) *benchBundle {
	b.Helper()
	pool := dbtest.NewPool(b)
	return &benchBundle{ctx: context.Background(), store: store.New(pool)}
}

// insertPending inserts n PENDING noop tasks, 5,000 a statement.
func (bb *benchBundle) insertPending(b *testing.B, n int) {
	b.Helper()
	for n > 0 {
		k := min(n, 5000)
		batch := make([]store.NewTask, k)
		for i := range batch {
			batch[i] = newTask("noop")
		}
		if _, err := bb.store.InsertTasks(bb.ctx, batch); err != nil {
			b.Fatal(err)
		}
		n -= k
	}
}

func claimParams(owner string, batch int) store.ClaimParams {
	return store.ClaimParams{
		Owner: owner, Total: batch,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: batch, Lease: time.Minute}},
	}
}

// claimedAs inserts n pending tasks, claims them as w1 and returns of each.
func claimedAs[T any](b *testing.B, bb *benchBundle, n int, of func(wftype.Task) T) []T {
	b.Helper()
	bb.insertPending(b, n)
	tasks := bb.claim(b, "w1", n)
	out := make([]T, len(tasks))
	for i, t := range tasks {
		out[i] = of(t)
	}
	return out
}

// claim claims exactly batch tasks or fails the benchmark.
func (bb *benchBundle) claim(b *testing.B, owner string, batch int) []wftype.Task {
	b.Helper()
	p := claimParams(owner, batch)
	p.Fair = bb.fair
	got, err := bb.store.ClaimTasks(bb.ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	if len(got) != batch {
		b.Fatalf("claimed %d tasks, want %d", len(got), batch)
	}
	return got
}

func reportPerTask(b *testing.B, batch int) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*batch), "µs/task")
}

// BenchmarkClaimTasks claims batches from a backlog of 20,000 PENDING tasks
// of one tenant (topped up between claims, outside the timer), with
// fairness off and on (the default): with one tenant the fair claim should
// cost about what the plain one does.
func BenchmarkClaimTasks(b *testing.B) {
	for _, c := range []struct {
		batch int
		fair  bool
	}{{100, false}, {100, true}, {400, false}, {400, true}, {1000, false}, {1000, true}} {
		batch := c.batch
		b.Run(fmt.Sprintf("batch=%d,fair=%t", batch, c.fair), func(b *testing.B) {
			bb := setupBench(b)
			if c.fair {
				bb.fair = &store.Fairness{}
			}
			const backlog = 20_000
			bb.insertPending(b, backlog)
			left := backlog
			b.ResetTimer()
			for range b.N {
				if left < batch {
					b.StopTimer()
					bb.insertPending(b, backlog)
					left += backlog
					b.StartTimer()
				}
				bb.claim(b, "w1", batch)
				left -= batch
			}
			reportPerTask(b, batch)
		})
	}
}

// BenchmarkClaimFairTenants claims fairly from a backlog of 20 tasks
// each of many tenants (refilled outside the timer), each claim resuming
// where the last one's scan of the tenants ended: the cost of a fair claim
// over as many tenants as its batch has tasks.
func BenchmarkClaimFairTenants(b *testing.B) {
	for _, c := range []struct{ tenants, batch int }{{1000, 100}, {1000, 1000}} {
		b.Run(fmt.Sprintf("tenants=%d,batch=%d", c.tenants, c.batch), func(b *testing.B) {
			bb := setupBench(b)
			fill := func() {
				var batch []store.NewTask
				for i := range c.tenants {
					for range 20 {
						tk := newTask("noop")
						tk.SchemaName, tk.Scope = fmt.Sprintf("t%04d", i), wftype.ScopeCatalog
						batch = append(batch, tk)
					}
				}
				if _, err := bb.store.InsertTasks(bb.ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			fill()
			left, after := 20*c.tenants, ""
			b.ResetTimer()
			for range b.N {
				if left < c.batch {
					b.StopTimer()
					fill()
					left += 20 * c.tenants
					b.StartTimer()
				}
				p := claimParams("w1", c.batch)
				p.Fair, p.Slots[0].FairAfter = &store.Fairness{}, after
				got, err := bb.store.Claim(bb.ctx, p)
				if err != nil || len(got.Tasks) != c.batch {
					b.Fatalf("claimed %d tasks (%v), want %d", len(got.Tasks), err, c.batch)
				}
				after = got.ScanEnd[store.Pair{Mode: wftype.ModeAsync, TaskType: "noop"}]
				left -= c.batch
			}
			reportPerTask(b, c.batch)
		})
	}
}

// BenchmarkFinishTasks completes batches of claimed tasks in one statement,
// alone and while 20,000 other tasks run (held by another instance): the
// cost of a batch must not grow with the number of running tasks. Each case
// runs without and with a step hook, as the engine installs one when the
// specs declare a workflow: the tasks here carry no run id, so the hook
// must cost them nothing (no transaction, no statement of its own).
func BenchmarkFinishTasks(b *testing.B) {
	for _, c := range []struct{ batch, running int }{{1, 0}, {100, 0}, {1000, 0}, {1000, 20_000}} {
		for _, hook := range []bool{false, true} {
			batch := c.batch
			b.Run(fmt.Sprintf("batch=%d,running=%d,workflows=%t", c.batch, c.running, hook), func(b *testing.B) {
				bb := setupBench(b)
				st := bb.store
				if hook {
					st = st.WithStepHook(func(context.Context, *store.Store, []store.FinishedStep) error {
						b.Fatal("the step hook was called for plain tasks")
						return nil
					})
				}
				if c.running > 0 {
					bb.insertPending(b, c.running)
					for left := c.running; left > 0; left -= 1000 {
						bb.claim(b, "other", 1000)
					}
				}
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					outcomes := claimedAs(b, bb, batch, func(t wftype.Task) store.Finish {
						return store.Finish{ID: t.ID, Status: wftype.StatusCompleted}
					})
					b.StartTimer()
					done, err := st.FinishTasks(bb.ctx, store.FinishParams{Owner: "w1"}, outcomes)
					if err != nil {
						b.Fatal(err)
					}
					if len(done) != batch {
						b.Fatalf("finished %d tasks, want %d", len(done), batch)
					}
				}
				reportPerTask(b, batch)
			})
		}
	}
}

// BenchmarkHeartbeat extends 1,000 leases in one statement. Every beat
// writes a new version of each row (the lease is indexed), so, as
// autovacuum would between two beats 30 s apart, the table is vacuumed every
// 10 beats outside the timer.
func BenchmarkHeartbeat(b *testing.B) {
	const n = 1000
	bb := setupBench(b)
	leases := claimedAs(b, bb, n, func(t wftype.Task) store.Lease {
		return store.Lease{ID: t.ID, Lease: time.Minute}
	})
	b.ResetTimer()
	for i := range b.N {
		if i > 0 && i%10 == 0 {
			b.StopTimer()
			if err := bb.store.VacuumAnalyzeTasks(bb.ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		held, err := bb.store.Heartbeat(bb.ctx, "w1", leases, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(held) != n {
			b.Fatalf("held %d leases, want %d", len(held), n)
		}
	}
	reportPerTask(b, n)
}
