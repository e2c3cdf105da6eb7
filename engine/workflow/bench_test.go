package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// BenchmarkSteps measures steps (tasks) per second through one engine
// (20 slots) with a handler that does nothing: plain tasks, the steps of
// 10-step chains (20 chains at once, so the slots are used as for plain
// tasks) and a 1,000-way fan-out with its fan-in. The difference per step
// is the workflow's overhead: the run's row locked, the step rows written
// and the next tasks created in the completing transaction. Run it with
// go run ./internal/dbtest/withdb -- go test -run - -bench Steps -benchtime 3x ./engine/workflow.
func BenchmarkSteps(b *testing.B) {
	ctx := context.Background()
	b.Run("plain_tasks", func(b *testing.B) {
		bn := setup(b, nil, true)
		for b.Loop() {
			batch := make([]store.NewTask, 1000)
			for i := range batch {
				batch[i] = store.NewTask{SchemaName: wftype.SystemSchema, Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync, TaskType: "nothing"}
			}
			start := time.Now()
			_, err := bn.st.InsertTasks(ctx, batch)
			require.NoError(b, err)
			require.Eventually(b, func() bool {
				var left int
				require.NoError(b, bn.pool.QueryRow(ctx, `SELECT count(*) FROM tasks.tasks WHERE status <> 'COMPLETED'`).Scan(&left))
				return left == 0
			}, 10*time.Minute, 10*time.Millisecond)
			b.ReportMetric(1000/time.Since(start).Seconds(), "steps/s")
		}
	})
	b.Run("chain10_x20", func(b *testing.B) {
		bn := setup(b, nil, true)
		for b.Loop() {
			start := time.Now()
			var runs []wftype.WorkflowRun
			for range 20 {
				runs = append(runs, bn.start(b, "chain10", `{}`))
			}
			for _, r := range runs {
				bn.wait(b, r.ID, wftype.RunCompleted)
			}
			b.ReportMetric(200/time.Since(start).Seconds(), "steps/s")
		}
	})
	b.Run("fanout1000", func(b *testing.B) {
		bn := setup(b, nil, true)
		for b.Loop() {
			start := time.Now()
			r := bn.start(b, "fan1000", `{"n": 1000}`)
			bn.wait(b, r.ID, wftype.RunCompleted)
			b.ReportMetric(1001/time.Since(start).Seconds(), "steps/s")
		}
	})
}
