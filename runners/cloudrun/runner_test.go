package cloudrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/runners/cloudrun"
	"github.com/wfhq/wf/runners/cloudrun/cloudruntest"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

// tasks is an in-memory TaskReader whose rows the fake executions change,
// as `wf exec` would change the database.
type tasks struct {
	mu   sync.Mutex
	rows map[uuid.UUID]wftype.Task
}

func (ts *tasks) GetTask(_ context.Context, id uuid.UUID) (wftype.Task, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.rows[id]
	if !ok {
		return t, wftype.ErrNotFound
	}
	return t, nil
}

func (ts *tasks) set(t wftype.Task) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.rows[t.ID] = t
}

// claimed returns an ACTIVE task as the dispatcher hands it to a runner.
func (ts *tasks) claimed(taskType string) *wftype.Task {
	t := runnertest.NewTask(wftype.ModeAsync, taskType)
	owner := "engine-1"
	t.OwnerID, t.Attempts = &owner, 2
	ts.set(*t)
	return t
}

const job = "projects/p1/locations/europe-west1/jobs/wf-worker"

type bundle struct {
	srv    *cloudruntest.Server
	tasks  *tasks
	runner *cloudrun.Runner
}

// setup starts the fake control plane with exec and a runner on it that
// maps "remote" to the job wf-worker.
func setup(t *testing.T, exec cloudruntest.Executor) *bundle {
	t.Helper()
	b := &bundle{tasks: &tasks{rows: map[uuid.UUID]wftype.Task{}}}
	b.srv = cloudruntest.NewServer(t, cloudruntest.Options{Executor: exec, Jobs: []string{job}})
	r, err := cloudrun.New(t.Context(), cloudrun.Config{
		Name: "gcp", Project: "p1", Region: "europe-west1",
		Jobs:  map[string]string{"remote": "wf-worker", "missing": "no-such-job"},
		Tasks: b.tasks, PollInterval: 10 * time.Millisecond, ClientOptions: b.srv.ClientOptions(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	b.runner = r
	return b
}

// runInBackground runs a claimed "remote" task in a goroutine under ctx;
// Run's error arrives on the channel it returns.
func (b *bundle) runInBackground(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := b.runner.Run(ctx, b.tasks.claimed("remote"), reporters.Discard{})
		done <- err
	}()
	return done
}

// finishes returns an executor that writes status to the task, as the
// worker would, then exits with err.
func (b *bundle) finishes(status wftype.TaskStatus, err error) cloudruntest.Executor {
	return func(_ context.Context, e cloudruntest.Execution) error {
		id := uuid.MustParse(e.Env[cloudrun.EnvTaskID])
		t, _ := b.tasks.GetTask(context.Background(), id)
		t.Status = status
		b.tasks.set(t)
		return err
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	b := setup(t, func(context.Context, cloudruntest.Execution) error { return nil })
	r := b.runner
	require.Equal(t, "cloudrun:gcp", r.Name())
	require.Equal(t, cloudrun.DefaultPriority, r.Priority())
	require.True(t, r.CanHandle(wftype.ModeAsync, "remote"))
	require.False(t, r.CanHandle(wftype.ModeSync, "remote"), "Cloud Run runs ASYNCHRONOUS tasks only")
	require.False(t, r.CanHandle(wftype.ModeAsync, "local"))
	require.True(t, runners.RunsRemotely(r))
	name, ok := r.Job("remote")
	require.True(t, ok)
	require.Equal(t, job, name)
}

// TestPriorityChain: with the Cloud Run runner in the chain it wins the
// types of its job map; without it the same type falls to the local runner.
func TestPriorityChain(t *testing.T) {
	t.Parallel()
	b := setup(t, func(context.Context, cloudruntest.Execution) error { return nil })
	local := localRunner{}
	pairs := []runners.Pair{{Mode: wftype.ModeAsync, TaskType: "remote"}, {Mode: wftype.ModeAsync, TaskType: "other"}}
	with := runners.BuildCapabilityMap([]runners.Runner{local, b.runner}, pairs)
	require.Equal(t, b.runner.Name(), with[pairs[0]].Name())
	require.Equal(t, "local", with[pairs[1]].Name())
	without := runners.BuildCapabilityMap([]runners.Runner{local}, pairs)
	require.Equal(t, "local", without[pairs[0]].Name())
}

// localRunner stands for a background runner that can run every type.
type localRunner struct{}

func (localRunner) Name() string                                    { return "local" }
func (localRunner) Priority() int                                   { return 100 }
func (localRunner) CanHandle(m wftype.ExecutionMode, _ string) bool { return m == wftype.ModeAsync }
func (localRunner) Run(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
	return nil, nil
}

func TestRunJobRequest(t *testing.T) {
	t.Parallel()
	var b *bundle
	b = setup(t, func(ctx context.Context, e cloudruntest.Execution) error {
		return b.finishes(wftype.StatusCompleted, nil)(ctx, e)
	})
	task := b.tasks.claimed("remote")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := b.runner.Run(ctx, task, reporters.Discard{})
	require.ErrorIs(t, err, wftype.ErrFinishedRemotely)

	execs := b.srv.Executions()
	require.Len(t, execs, 1)
	e := execs[0]
	require.Equal(t, job, e.Job)
	require.Equal(t, []string{"exec", "--task-id", task.ID.String()}, e.Args)
	require.Equal(t, map[string]string{"WF_TASK_ID": task.ID.String(), "WF_OWNER_ID": "engine-1", "WF_ATTEMPT": "2"}, e.Env)
	require.Equal(t, int32(1), e.TaskCount)
	require.InDelta(t, time.Minute.Seconds(), e.Timeout.Seconds(), 2, "the run's deadline bounds the execution")
	require.Empty(t, b.srv.Cancelled())
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		status  wftype.TaskStatus // what the worker writes; "" writes nothing
		exitErr error
		wantErr string // "" means ErrFinishedRemotely
	}{
		"WorkerCompleted":        {status: wftype.StatusCompleted},
		"WorkerFailedTheTask":    {status: wftype.StatusFailed, exitErr: errors.New("exit status 1")},
		"WorkerRetried":          {status: wftype.StatusPending, exitErr: errors.New("exit status 1")},
		"WorkerDeadLettered":     {status: wftype.StatusDeadLetter, exitErr: errors.New("exit status 1")},
		"CrashedWithoutReport":   {exitErr: errors.New("out of memory"), wantErr: "ended (failed: Task failed: out of memory) without its worker writing the task's result"},
		"SucceededWithoutReport": {wantErr: "ended (succeeded: Execution completed successfully"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var b *bundle
			b = setup(t, func(ctx context.Context, e cloudruntest.Execution) error {
				if tc.status == "" {
					return tc.exitErr
				}
				return b.finishes(tc.status, tc.exitErr)(ctx, e)
			})
			_, err := b.runner.Run(t.Context(), b.tasks.claimed("remote"), reporters.Discard{})
			if tc.wantErr == "" {
				require.ErrorIs(t, err, wftype.ErrFinishedRemotely)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.NotErrorIs(t, err, wftype.ErrFinishedRemotely)
			require.False(t, wftype.IsPermanent(err), "a lost execution is retried")
		})
	}
}

// TestTakenOverByAnotherClaim: the task is ACTIVE again but under a later
// claim: this run's result must not be written over it.
func TestTakenOverByAnotherClaim(t *testing.T) {
	t.Parallel()
	var b *bundle
	b = setup(t, func(_ context.Context, e cloudruntest.Execution) error {
		id := uuid.MustParse(e.Env[cloudrun.EnvTaskID])
		cur, _ := b.tasks.GetTask(context.Background(), id)
		cur.Attempts++
		b.tasks.set(cur)
		return errors.New("lease lost")
	})
	_, err := b.runner.Run(t.Context(), b.tasks.claimed("remote"), reporters.Discard{})
	require.ErrorIs(t, err, wftype.ErrFinishedRemotely)
}

func TestCancelStopsExecution(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	b := setup(t, func(ctx context.Context, _ cloudruntest.Execution) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithCancelCause(t.Context())
	done := b.runInBackground(ctx)
	<-started
	requireCancelled(t, cancel, done, 10*time.Second)
	execs := b.srv.Executions()
	require.Len(t, execs, 1)
	require.Equal(t, []string{execs[0].Name}, b.srv.Cancelled())
}

// TestCancelAfterWorkerWrote: the dispatcher cancels the run because its
// heartbeat saw the task finished; the execution is left alone.
func TestCancelAfterWorkerWrote(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	wrote := make(chan struct{})
	var b *bundle
	b = setup(t, func(ctx context.Context, e cloudruntest.Execution) error {
		_ = b.finishes(wftype.StatusCompleted, nil)(ctx, e)
		close(wrote)
		<-release
		return nil
	})
	defer close(release)
	ctx, cancel := context.WithCancel(t.Context())
	done := b.runInBackground(ctx)
	<-wrote
	cancel()
	require.ErrorIs(t, <-done, wftype.ErrFinishedRemotely)
	require.Empty(t, b.srv.Cancelled())
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, func(context.Context, cloudruntest.Execution) error { return nil })
	_, err := b.runner.Run(t.Context(), b.tasks.claimed("missing"), reporters.Discard{})
	require.ErrorContains(t, err, "error starting Cloud Run job projects/p1/locations/europe-west1/jobs/no-such-job")
	require.ErrorContains(t, err, "NotFound")
	require.False(t, wftype.IsPermanent(err))

	_, err = b.runner.Run(t.Context(), b.tasks.claimed("unmapped"), reporters.Discard{})
	require.True(t, wftype.IsPermanent(err))

	task := b.tasks.claimed("remote")
	task.OwnerID = nil
	_, err = b.runner.Run(t.Context(), task, reporters.Discard{})
	require.ErrorContains(t, err, "no owner id")
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := cloudrun.New(t.Context(), cloudrun.Config{
		Jobs: map[string]string{"a": "", "b": "x/y", "c": "job-c"}, PollInterval: -time.Second,
	})
	for _, want := range []string{
		"the name is empty", "no task reader", "poll interval is -1s",
		`task type "a": the job name is empty`,
		`task type "b": job "x/y" is neither a job name nor projects/P/locations/R/jobs/J`,
		`task type "c": job "job-c" needs the runner's project and region`,
	} {
		require.ErrorContains(t, err, want)
	}
	_, err = cloudrun.New(t.Context(), cloudrun.Config{Name: "n", Tasks: &tasks{}})
	require.ErrorContains(t, err, "no task type is mapped to a job")
}

// requireCancelled cancels a Run's context with a cause and requires the Run
// (its error on done) to return within timeout, cancelled by that cause.
func requireCancelled(t *testing.T, cancel context.CancelCauseFunc, done <-chan error, timeout time.Duration) {
	t.Helper()
	cause := errors.New("run timeout exceeded")
	cancel(cause)
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		t.Fatal("Run did not return after its context was cancelled")
	}
	require.ErrorIs(t, err, cause)
	require.ErrorContains(t, err, "was cancelled")
}
