package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// crashWorkflows: a 1,000-way fan-out between a first step and a fan-in
// step, and a chain of 100 steps, all of the recording task type; each
// workflow.completed event becomes one more recording task.
func crashWorkflows() string {
	var b strings.Builder
	b.WriteString(`kind: Subscription
name: completed-runs
event_type: workflow.completed
task_type: record
---
kind: Workflow
name: fan
inputs: {type: object, properties: {items: {type: array, items: {type: integer}}}}
steps:
  first: {task_type: record}
  each: {task_type: record, depends_on: [first], for_each: inputs.items, concurrency: 1000, inputs: {n: item}}
  join: {task_type: record, depends_on: [each], inputs: {seen: len(steps.each.outputs)}}
---
kind: Workflow
name: chain
steps:
  s000: {task_type: record}
`)
	for i := 1; i < 100; i++ {
		fmt.Fprintf(&b, "  s%03d: {task_type: record, depends_on: [s%03d]}\n", i, i-1)
	}
	return b.String()
}

// TestWorkflowsSurviveKill9: three `wf run` processes run a 1,000-way
// fan-out run and a 100-step chain run; one process is killed with SIGKILL
// (and restarted) three times while steps complete. Both runs complete, and
// every step task exists exactly once per step and item: none was lost
// (each completion and the tasks it unblocks commit together), none created
// twice, and the fan-in step was created once.
func TestWorkflowsSurviveKill9(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	require.NoError(t, os.WriteFile(filepath.Join(c.specs, "workflows.yaml"), []byte(crashWorkflows()), 0o644))
	items := make([]string, 1000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	input := filepath.Join(t.TempDir(), "fan.json")
	require.NoError(t, os.WriteFile(input, []byte(`{"items": [`+strings.Join(items, ",")+`]}`), 0o644))
	for _, args := range [][]string{{"workflows", "start", "--json", input, "fan"}, {"workflows", "start", "chain"}} {
		out, err := c.command(args...).CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "started run")
	}
	c.start("a")
	c.start("b")
	victim := c.start("victim-0")
	for i := range 3 {
		// Kill the victim once it has completed some steps, then start
		// another in its place.
		deadline := time.Now().Add(3 * time.Minute)
		for c.count(fmt.Sprintf(`SELECT count(*) FROM wf_test.executions WHERE pid = %d`, victim.Process.Pid)) < 20 {
			if c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE status = 'RUNNING'`) == 0 {
				break // the runs ended before the victim got its share
			}
			require.True(t, time.Now().Before(deadline), "the victim never ran steps")
			time.Sleep(20 * time.Millisecond) // wall time: real wf processes do the work
		}
		require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
		_ = victim.Wait()
		victim = c.start(fmt.Sprintf("victim-%d", i+1))
	}
	deadline := time.Now().Add(5 * time.Minute)
	for c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE status = 'COMPLETED'`) < 2 {
		require.Zero(t, c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE status IN ('FAILED', 'CANCELLED')`), "a run failed")
		require.True(t, time.Now().Before(deadline), "the runs did not complete: %d of %d step tasks completed",
			c.count(`SELECT count(*) FROM tasks.tasks WHERE status = 'COMPLETED'`), 1+1000+1+100)
		time.Sleep(100 * time.Millisecond) // wall time: real wf processes do the work
	}
	// The processes are killed when the test ends (graceful shutdown is
	// TestThreeProcessesRunEachTaskOnce's concern); every run ended already.
	require.Equal(t, 1+1000+1+100, c.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_run_id IS NOT NULL`), "a step task lost or duplicated")
	require.Zero(t, c.count(`
SELECT count(*) FROM (SELECT 1 FROM tasks.tasks WHERE workflow_run_id IS NOT NULL
                      GROUP BY workflow_run_id, workflow_step, workflow_item HAVING count(*) > 1) d`), "a step task created twice")
	require.Equal(t, 1, c.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_step = 'join'`), "the fan-in created more than once")
	require.Equal(t, `{"seen": 1000}`, c.string(`SELECT inputs::text FROM tasks.tasks WHERE workflow_step = 'join'`))
	require.Equal(t, 100, c.count(`SELECT count(*) FROM tasks.workflow_steps s JOIN tasks.workflow_runs r USING (run_id)
WHERE r.workflow = 'chain' AND s.status = 'COMPLETED'`))
	require.Equal(t, 1, c.count(`SELECT count(*) FROM tasks.workflow_steps WHERE step = 'each' AND status = 'COMPLETED' AND done = 1000 AND started = 1000`))
	// Each run's workflow.completed event was written, and consumed once:
	// one task of the subscription each, and no event left.
	for c.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_run_id IS NULL AND dedup_key LIKE 'evt:%:record'`) < 2 ||
		c.count(`SELECT count(*) FROM tasks.events WHERE event_type = 'workflow.completed'`) > 0 {
		require.True(t, time.Now().Before(deadline), "the workflow.completed events were not consumed")
		time.Sleep(100 * time.Millisecond) // wall time: real wf processes do the work
	}
	require.Equal(t, 2, c.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_run_id IS NULL AND dedup_key LIKE 'evt:%:record'`))
}
