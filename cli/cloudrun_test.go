package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/runners/cloudrun/cloudruntest"
	"github.com/wfhq/wf/wftype"
)

// cloudRunSpec maps taskType to the job wf-worker of project p1.
func cloudRunSpec(taskType string) string {
	return fmt.Sprintf(`kind: Runner
name: gcp
description: Runs %[1]s as Cloud Run jobs.
type: cloudrun
settings:
  project: p1
  region: europe-west1
  jobs: {%[1]s: wf-worker}
`, taskType)
}

const workerJob = "projects/p1/locations/europe-west1/jobs/wf-worker"

// withCloudRun starts the fake control plane with exec and points the
// installation's Cloud Run runners at it.
func (e *wfEnv) withCloudRun(exec cloudruntest.Executor) *cloudruntest.Server {
	srv := cloudruntest.NewServer(e.t, cloudruntest.Options{Executor: exec, Jobs: []string{workerJob}})
	e.opts.CloudRun = CloudRunOptions{ClientOptions: srv.ClientOptions(), PollInterval: 50 * time.Millisecond}
	return srv
}

// workerExecutor runs the real wf binary in the execution, as the job's
// container would: its configuration comes from the job's environment.
func (e *wfEnv) workerExecutor() cloudruntest.Executor {
	return cloudruntest.CommandExecutor(e.t, buildWF(e.t), append(e.env(), "WF_HEARTBEAT_INTERVAL=300ms", "WF_LOG_LEVEL=info")...)
}

// TestPriorityChain: the same task type is claimed by the Cloud Run runner
// when a cloudrun Runner spec maps it, and by the local exec runner when
// none does. Either way it shows live progress and leaves a complete
// report; on Cloud Run the records, progress and result come from `wf exec`
// in the execution, under the dispatcher's claim.
func TestPriorityChain(t *testing.T) {
	t.Parallel()
	t.Run("CloudRun", func(t *testing.T) {
		t.Parallel()
		gate := filepath.Join(t.TempDir(), "gate")
		e := newWFEnv(t, map[string]string{
			"types.yaml":  execTaskType("remote_records", gatedScript(t), gate, 1),
			"runner.yaml": cloudRunSpec("remote_records"),
		})
		srv := e.withCloudRun(e.workerExecutor())
		e.engine()
		id := e.enqueue("remote_records", map[string]any{})
		done, out := requireLiveThenComplete(t, e, id, gate)
		require.Equal(t, deref(done.OwnerID), out["owner"], "the worker ran under the dispatcher's claim")
		require.NotEmpty(t, out["owner"])
		require.Equal(t, 1, done.Attempts)

		execs := srv.Executions()
		require.Len(t, execs, 1, "one execution per task")
		require.Equal(t, workerJob, execs[0].Job)
		require.Equal(t, []string{"exec", "--task-id", id.String()}, execs[0].Args)
		require.Equal(t, deref(done.OwnerID), execs[0].Env["WF_OWNER_ID"])
		require.Equal(t, "1", execs[0].Env["WF_ATTEMPT"])
		// The runner sees the worker's result and writes nothing over it;
		// the execution ran to its end.
		time.Sleep(300 * time.Millisecond) // wall time: the runner's poll of a real execution process must get a turn
		again := e.show(id)
		require.Equal(t, done.Outputs, again.Outputs)
		require.Equal(t, done.FinishedAt, again.FinishedAt)
		require.Empty(t, srv.Cancelled())
	})
	t.Run("Local", func(t *testing.T) {
		t.Parallel()
		gate := filepath.Join(t.TempDir(), "gate")
		e := newWFEnv(t, map[string]string{"types.yaml": execTaskType("remote_records", gatedScript(t), gate, 1)})
		srv := e.withCloudRun(func(context.Context, cloudruntest.Execution) error {
			return errors.New("no execution may start without a cloudrun Runner spec")
		})
		e.engine()
		id := e.enqueue("remote_records", map[string]any{})
		_, out := requireLiveThenComplete(t, e, id, gate)
		require.Equal(t, "", out["owner"], "ran by the local exec runner")
		require.Empty(t, srv.Executions())
	})
}

// TestCloudRunExecutionLost: executions that fail without their worker
// reporting (the container never ran wf) fail the run: the task is retried,
// then dead-lettered, with the execution's outcome in the error.
func TestCloudRunExecutionLost(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{
		"types.yaml":  execTaskType("remote_lost", "/nonexistent.sh", "/nonexistent", 1),
		"runner.yaml": cloudRunSpec("remote_lost"),
	})
	srv := e.withCloudRun(func(context.Context, cloudruntest.Execution) error {
		return errors.New("image pull failed")
	})
	e.engine()
	id := e.enqueue("remote_lost", map[string]any{})
	done := e.waitEnded(id)
	require.Equal(t, wftype.StatusDeadLetter, done.Status)
	require.Equal(t, 1, done.RetryCount)
	require.Equal(t, 2, done.Attempts)
	require.Contains(t, deref(done.Error), "ended (failed: Task failed: image pull failed) without its worker writing the task's result")
	require.Len(t, srv.Executions(), 2)
}

// TestCloudRunWorkerFailure: the worker's handler fails; the worker writes
// the retry, then the dead letter, itself, and the runner writes nothing
// over them: the task's error is the handler's.
func TestCloudRunWorkerFailure(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "fail.sh")
	require.NoError(t, writeFile(script, "echo 'the source is unreadable' >&2\nexit 1\n"))
	e := newWFEnv(t, map[string]string{
		"types.yaml":  execTaskType("remote_fail", script, "/nonexistent", 1),
		"runner.yaml": cloudRunSpec("remote_fail"),
	})
	srv := e.withCloudRun(e.workerExecutor())
	e.engine()
	id := e.enqueue("remote_fail", map[string]any{})
	done := e.waitEnded(id)
	require.Equal(t, wftype.StatusDeadLetter, done.Status)
	require.Equal(t, 1, done.RetryCount)
	require.Contains(t, deref(done.Error), "the source is unreadable")
	require.NotContains(t, deref(done.Error), "without its worker")
	require.Len(t, srv.Executions(), 2)
	require.Empty(t, srv.Cancelled())
}
