package cli_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitCrashWorkflows: runs that sleep, wait for an event (or time out and
// go on) and wait for a signal (or time out and fail), each followed by a
// recording task.
const waitCrashWorkflows = `kind: Workflow
name: nap
inputs: {type: object, properties: {n: {type: integer}}}
steps:
  nap: {sleep: {duration: 4s}}
  after: {task_type: record, depends_on: [nap]}
---
kind: Workflow
name: paid
inputs: {type: object, properties: {order: {type: string}}}
steps:
  paid:
    wait_for_event:
      event_type: order.paid
      payload: {type: object, properties: {order: {type: string}}}
      match: 'event.payload.order == inputs.order'
      timeout: 8s
      on_timeout: continue
  after: {task_type: record, depends_on: [paid], inputs: {status: steps.paid.status}}
---
kind: Workflow
name: approved
inputs: {type: object, properties: {n: {type: integer}}}
steps:
  approve: {approval: {timeout: 8s}}
  after: {task_type: record, depends_on: [approve]}
`

// TestWaitingRunsSurviveKill9: two `wf run` processes hold runs that sleep,
// wait for an event and wait for a signal; both are killed with SIGKILL
// (one, then the other while the first is down), the event is emitted and
// a signal sent while no wf runs, and the sleeps and timeouts fall due
// meanwhile. Once restarted, every run ends exactly once with the outcome
// its wait calls for: the sleeps and the matched wait complete, the
// unmatched wait times out and goes on (TIMED_OUT), the signalled approval
// completes and the other times out and fails its run; each step after a
// wait ran once (or never, after the failed one), and each run wrote one
// workflow event.
func TestWaitingRunsSurviveKill9(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	require.NoError(t, os.WriteFile(filepath.Join(c.specs, "waits.yaml"), []byte(waitCrashWorkflows), 0o644))
	a := c.start("a")
	victim := c.start("victim")
	for _, args := range [][]string{
		{"workflows", "start", "--input", "n=1", "nap"}, {"workflows", "start", "--input", "n=2", "nap"},
		{"workflows", "start", "--input", "n=3", "nap"},
		{"workflows", "start", "--input", "order=A", "paid"}, {"workflows", "start", "--input", "order=B", "paid"},
		{"workflows", "start", "--input", "n=1", "approved"}, {"workflows", "start", "--input", "n=2", "approved"},
	} {
		out, err := c.command(args...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	require.Equal(t, 7, c.count(`SELECT count(*) FROM tasks.workflow_steps WHERE status = 'RUNNING' AND (wake_at IS NOT NULL OR wait_signal IS NOT NULL)`))

	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	_ = victim.Wait()
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	_ = a.Wait()
	// With no wf running: the event of order A, the signal of the first
	// approval run (the CLI ends its step in its own transaction).
	out, err := c.command("events", "emit", "--payload", `{"order": "A"}`, "order.paid").CombinedOutput()
	require.NoError(t, err, string(out))
	first := c.string(`SELECT run_id::text FROM tasks.workflow_runs WHERE workflow = 'approved' AND inputs->>'n' = '1'`)
	out, err = c.command("workflows", "signal", first[:13], "approve").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "approve")

	c.start("a2")
	victim = c.start("victim2")
	deadline := time.Now().Add(3 * time.Minute)
	for c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE status = 'RUNNING'`) > 0 {
		require.True(t, time.Now().Before(deadline), "runs still wait: %d", c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE status = 'RUNNING'`))
		time.Sleep(100 * time.Millisecond) // wall time: real wf processes do the work
	}
	// Killed again once everything ended: nothing changes after a restart.
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	_ = victim.Wait()

	require.Equal(t, 6, c.count(`SELECT count(*) FROM tasks.workflow_runs WHERE status = 'COMPLETED'`))
	require.Equal(t, `step approve timed out: no signal approve came within 8s`,
		c.string(`SELECT left(error, 56) FROM tasks.workflow_runs WHERE status = 'FAILED' AND workflow = 'approved' AND inputs->>'n' = '2'`))
	require.Equal(t, "COMPLETED", c.string(`SELECT s.status FROM tasks.workflow_steps s JOIN tasks.workflow_runs r USING (run_id)
WHERE r.inputs->>'order' = 'A' AND s.step = 'paid'`))
	require.Equal(t, `{"order": "A"}`, c.string(`SELECT s.outputs::text FROM tasks.workflow_steps s JOIN tasks.workflow_runs r USING (run_id)
WHERE r.inputs->>'order' = 'A' AND s.step = 'paid'`))
	require.Equal(t, "TIMED_OUT", c.string(`SELECT s.status FROM tasks.workflow_steps s JOIN tasks.workflow_runs r USING (run_id)
WHERE r.inputs->>'order' = 'B' AND s.step = 'paid'`))
	require.Equal(t, `{"status": "TIMED_OUT"}`, c.string(`SELECT t.inputs::text FROM tasks.tasks t JOIN tasks.workflow_runs r ON r.run_id = t.workflow_run_id
WHERE r.inputs->>'order' = 'B'`))
	// Each step after a wait ran exactly once (none after the failed
	// approval), and each run wrote one event of its end.
	require.Equal(t, 6, c.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_step = 'after'`))
	require.Equal(t, 6, c.count(`SELECT count(DISTINCT task_id) FROM wf_test.executions`))
	require.Equal(t, 6, c.count(`SELECT count(*) FROM tasks.tasks WHERE workflow_step = 'after' AND status = 'COMPLETED'`))
	require.Equal(t, 7, c.count(`SELECT count(*) FROM tasks.events WHERE event_type IN ('workflow.completed', 'workflow.failed')`))
	require.Equal(t, 7, c.count(`SELECT count(DISTINCT payload->>'run_id') FROM tasks.events WHERE event_type IN ('workflow.completed', 'workflow.failed')`))
	require.Zero(t, c.count(`SELECT count(*) FROM tasks.workflow_deliveries`))
}
