package metrics_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/metrics"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestDedupKeysKept: the leader reports the keys of ended tasks that a
// unique period holds (one of two: the other task's key had no period and
// was freed); an instance that does not lead reports nothing.
func TestDedupKeysKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := dbtest.NewStore(t)
	tasks := []store.NewTask{
		{SchemaName: wftype.SystemSchema, Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync, TaskType: "noop",
			Inputs: json.RawMessage(`{}`), DedupKey: "held", UniqueFor: time.Hour, UniqueStates: []wftype.TaskStatus{wftype.StatusCompleted}},
		{SchemaName: wftype.SystemSchema, Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync, TaskType: "noop",
			Inputs: json.RawMessage(`{}`), DedupKey: "freed"},
	}
	_, err := st.InsertTasks(ctx, tasks)
	require.NoError(t, err)
	dbtest.CompleteTasks(t, ctx, st, "noop", 2)

	kept := func(leader bool) []float64 {
		m := metrics.New(metrics.Config{Store: st})
		m.SetSources(metrics.Sources{IsLeader: func() bool { return leader }})
		fams, err := m.Registry().Gather()
		require.NoError(t, err)
		var out []float64
		for _, f := range fams {
			if f.GetName() == "wf_dedup_keys_kept" {
				for _, mt := range f.GetMetric() {
					out = append(out, mt.GetGauge().GetValue())
				}
			}
		}
		return out
	}
	require.Equal(t, []float64{1}, kept(true))
	require.Empty(t, kept(false))
}
