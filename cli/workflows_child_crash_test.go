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

// childCrashWorkflows: parent runs first, then a child run of child (a
// chain of 40 steps, then a 200-way fan-out and its fan-in), then after,
// which reads the child's outputs.
func childCrashWorkflows() string {
	var b strings.Builder
	b.WriteString(`kind: Workflow
name: child
steps:
  c00: {task_type: record}
`)
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "  c%02d: {task_type: record, depends_on: [c%02d]}\n", i, i-1)
	}
	b.WriteString(`  each: {task_type: record, depends_on: [c39], for_each: 'map(1..200, #)', concurrency: 10, inputs: {n: item}}
  join: {task_type: record, depends_on: [each], inputs: {seen: len(steps.each.outputs)}}
outputs:
  seen: len(steps.each.outputs)
---
kind: Workflow
name: parent
steps:
  first: {task_type: record}
  call: {workflow: child, depends_on: [first]}
  after: {task_type: record, depends_on: [call], inputs: {seen: steps.call.outputs.seen}}
outputs:
  seen: steps.call.outputs.seen
`)
	return b.String()
}

// TestChildRunSurvivesKill9: `wf run` processes run a parent whose child
// run is running; the one that runs the child's steps (alone at first) is
// killed with SIGKILL twice while the parent waits on the child (and
// restarted). The
// child and the parent each complete exactly once: one child run, one
// workflow.completed event each, every step task once per step and item,
// and the parent's last step sees the child's outputs.
func TestChildRunSurvivesKill9(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	require.NoError(t, os.WriteFile(filepath.Join(c.specs, "workflows.yaml"), []byte(childCrashWorkflows()), 0o644))
	out, err := c.command("workflows", "start", "parent").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "started run")
	// The victim runs alone until its first kill, so that it, not another
	// instance, runs the child's first steps however busy the machine is.
	victim := c.start("victim-0")
	kills := 0
	for i := range 2 {
		// Kill the victim while the child runs, once it ran some of the
		// child's steps, then start another in its place.
		deadline := time.Now().Add(3 * time.Minute)
		for c.count(fmt.Sprintf(`SELECT count(*) FROM wf_test.executions e JOIN tasks.tasks t USING (task_id)
JOIN tasks.workflow_runs r ON r.run_id = t.workflow_run_id
WHERE e.pid = %d AND r.workflow = 'child'`, victim.Process.Pid)) < 5 {
			if i > 0 && c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE workflow = 'child' AND status = 'RUNNING'`) == 0 {
				break // the child ended: the first kill hit it running
			}
			require.True(t, time.Now().Before(deadline), "the victim never ran the child's steps; runs: %s",
				c.string(`SELECT string_agg(workflow || ' ' || status, ', ') FROM tasks.workflow_runs`))
			time.Sleep(20 * time.Millisecond) // wall time: real wf processes do the work
		}
		if c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE workflow = 'child' AND status = 'RUNNING'`) == 0 {
			break // the child ended before this kill: the first one hit it running
		}
		require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
		_ = victim.Wait()
		kills++
		if i == 0 {
			c.start("a")
		}
		victim = c.start(fmt.Sprintf("victim-%d", i+1))
	}
	require.Positive(t, kills, "no kill while the parent waited on its running child")
	t.Logf("killed %d times while the child ran", kills)
	deadline := time.Now().Add(5 * time.Minute)
	for c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE status = 'COMPLETED'`) < 2 {
		require.Zero(t, c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE status IN ('FAILED', 'CANCELLED')`), "a run failed")
		require.True(t, time.Now().Before(deadline), "the runs did not complete: %d step tasks completed",
			c.count(`SELECT count(*) FROM tasks.tasks WHERE status = 'COMPLETED'`))
		time.Sleep(100 * time.Millisecond) // wall time: real wf processes do the work
	}
	require.Equal(t, 2, c.count(`SELECT count(*) FROM tasks.workflow_runs`), "one parent, one child")
	require.Equal(t, 1, c.count(`SELECT count(*) FROM tasks.workflow_runs c JOIN tasks.workflow_runs p ON p.run_id = c.parent_run_id
WHERE c.workflow = 'child' AND p.workflow = 'parent' AND c.parent_step = 'call'`), "the child names its parent")
	require.Equal(t, 1+1+40+200+1, c.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_run_id IS NOT NULL`), "a step task lost or duplicated")
	require.Zero(t, c.count(`
SELECT count(*) FROM (SELECT 1 FROM tasks.tasks WHERE workflow_run_id IS NOT NULL
                      GROUP BY workflow_run_id, workflow_step, workflow_item HAVING count(*) > 1) d`), "a step task created twice")
	require.Equal(t, `{"seen": 200}`, c.string(`SELECT inputs::text FROM tasks.tasks WHERE workflow_step = 'after'`))
	require.Equal(t, `{"seen": 200}`, c.string(`SELECT outputs::text FROM tasks.workflow_runs WHERE workflow = 'parent'`))
	require.Equal(t, 2, c.count(`SELECT count(DISTINCT payload->>'run_id') FROM tasks.events WHERE event_type = 'workflow.completed'`))
	require.Equal(t, 2, c.count(`SELECT count(*) FROM tasks.events WHERE event_type LIKE 'workflow.%'`), "each run ended once")
}
