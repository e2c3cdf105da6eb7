package engine_test

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/store"
)

// gather reads one engine's metrics by name.
func gather(t *testing.T, e *engine.Engine) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := e.Metrics().Registry().Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// sumOf adds a metric's values over the instances, as sum() does.
func sumOf(fams []map[string]*dto.MetricFamily, name string, match func(labels map[string]string) bool) float64 {
	var total float64
	for _, f := range fams {
		for _, m := range f[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if match == nil || match(labels) {
				total += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// TestMetricsReportTheQueueOnce: with three instances on one database,
// only the leader reports the database-wide gauges, so sum() across the
// instances is the database's count; every instance reports its leader
// flag (summing to 1), its slots and the build.
func TestMetricsReportTheQueueOnce(t *testing.T) {
	t.Parallel()
	pool, st, _, engines := startFleet(t, "m1", "m2", "m3")
	enqueueCount(t, st, 50)
	require.Eventually(t, func() bool { return completed(t, pool) == 50 }, 30*time.Second, 20*time.Millisecond)
	// Dead letters and a PENDING task that is due but cannot run here.
	_, err := pool.Exec(t.Context(), `UPDATE tasks.tasks SET status = 'DEAD_LETTER' WHERE task_id IN (SELECT task_id FROM tasks.tasks LIMIT 2)`)
	require.NoError(t, err)
	_, err = st.InsertTasks(t.Context(), []store.NewTask{{SchemaName: "system", Scope: "SYSTEM", ExecutionMode: "ASYNCHRONOUS", TaskType: "elsewhere", MaxRetries: 1}})
	require.NoError(t, err)

	var fams []map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		fams = fams[:0]
		for _, e := range engines {
			fams = append(fams, gather(t, e))
		}
		// The leader re-read after its TTL, and its PENDING counts
		// snapshot (refreshed every few seconds) holds the new task.
		return sumOf(fams, "wf_tasks_dead_letter", nil) == 2 && sumOf(fams, "wf_queue_depth", func(l map[string]string) bool {
			return l["task_type"] == "elsewhere" && l["status"] == "PENDING"
		}) == 1
	}, 60*time.Second, 200*time.Millisecond)
	require.Equal(t, 1.0, sumOf(fams, "wf_leader", nil))
	require.Equal(t, 1.0, sumOf(fams, "wf_queue_depth_up", nil), "one instance, the leader, reads the queue")
	require.Equal(t, 1.0, sumOf(fams, "wf_queue_depth", func(l map[string]string) bool {
		return l["task_type"] == "elsewhere" && l["schema_name"] == "system" && l["status"] == "PENDING"
	}))
	// Gauges that are not counts are present on one instance only.
	present := func(name string) int {
		n := 0
		for _, f := range fams {
			n += len(f[name].GetMetric())
		}
		return n
	}
	require.Equal(t, 1, present("wf_queue_oldest_pending_age_seconds"))
	require.Equal(t, 1, present("wf_outbox_oldest_pending_age_seconds"))
	require.Equal(t, 3, present("wf_outbox_events"), "PENDING, PROCESSING and DEAD_LETTER, on the leader")
	require.Equal(t, 60.0, sumOf(fams, "wf_slots_total", nil))
	require.Equal(t, 3.0, sumOf(fams, "wf_build_info", nil))
	require.Equal(t, 50.0, sumOf(fams, "wf_tasks_claimed_total", nil))
}
