package cloudrun_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	run "cloud.google.com/go/run/apiv2"
	"cloud.google.com/go/run/apiv2/runpb"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wfhq/wf/internal/livetest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/cloudrun"
	"github.com/wfhq/wf/runners/cloudrun/cloudruntest"
	"github.com/wfhq/wf/wftype"
)

// jobsBackend is the Cloud Run a contract runs against: the in-process
// control plane (fakeJobs) or a real project (liveJobs, under make
// test-live), each with three jobs whose container is not wf: "ok" exits
// 0, "fail" exits 3, "sleep" runs until cancelled.
type jobsBackend struct {
	project, region string
	jobs            map[string]string // task type → the job's full name
	opts            []option.ClientOption
	poll            time.Duration
	// executions lists the executions of a job, newest first, with whether
	// each was cancelled or has ended.
	executions func(t *testing.T, job string) []jobExecution
}

// jobExecution is what the contract reads of an execution.
type jobExecution struct {
	name            string
	cancelled, done bool
}

func fakeJobs(t *testing.T) jobsBackend {
	t.Helper()
	const parent = "projects/p1/locations/europe-west1/jobs/"
	jobs := map[string]string{"ok": parent + "ok", "fail": parent + "fail", "sleep": parent + "sleep"}
	srv := cloudruntest.NewServer(t, cloudruntest.Options{Jobs: []string{jobs["ok"], jobs["fail"], jobs["sleep"]},
		Executor: func(ctx context.Context, e cloudruntest.Execution) error {
			switch e.Job {
			case jobs["fail"]:
				return errors.New("Container exited with status 3")
			case jobs["sleep"]:
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}})
	return jobsBackend{project: "p1", region: "europe-west1", jobs: jobs, opts: srv.ClientOptions(), poll: 10 * time.Millisecond,
		executions: func(t *testing.T, job string) []jobExecution {
			cancelled := map[string]bool{}
			for _, name := range srv.Cancelled() {
				cancelled[name] = true
			}
			var out []jobExecution
			for _, e := range srv.Executions() {
				if e.Job == job {
					out = append([]jobExecution{{name: e.Name, cancelled: cancelled[e.Name], done: cancelled[e.Name]}}, out...)
				}
			}
			return out
		}}
}

// liveJobs creates the three jobs (busybox from Docker Hub, no retries) in
// the project and region livetest.RequireGCP names, and deletes them when
// the test ends.
func liveJobs(t *testing.T) jobsBackend {
	t.Helper()
	live := livetest.RequireGCP(t, false)
	ctx := context.Background()
	jobsClient, err := run.NewJobsClient(ctx)
	require.NoError(t, err)
	execs, err := run.NewExecutionsClient(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = jobsClient.Close(); _ = execs.Close() })
	parent := "projects/" + live.Project + "/locations/" + live.Region
	prefix := livetest.Name("wft")
	jobs := map[string]string{}
	// The runner's args (exec --task-id …) follow the command: sh -c
	// takes them as $0 $1 …, true ignores them.
	for taskType, command := range map[string][]string{
		"ok": {"true"}, "fail": {"sh", "-c", "exit 3"}, "sleep": {"sh", "-c", "sleep 900"},
	} {
		id := prefix + "-" + taskType
		op, err := jobsClient.CreateJob(ctx, &runpb.CreateJobRequest{Parent: parent, JobId: id, Job: &runpb.Job{
			Template: &runpb.ExecutionTemplate{TaskCount: 1, Template: &runpb.TaskTemplate{
				Containers: []*runpb.Container{{Image: "docker.io/library/busybox:1.36", Command: command}},
				Retries:    &runpb.TaskTemplate_MaxRetries{MaxRetries: 0},
				Timeout:    durationpb.New(20 * time.Minute),
			}},
		}})
		require.NoError(t, err, "creating live Cloud Run job %s", id)
		job, err := op.Wait(ctx)
		require.NoError(t, err, "creating live Cloud Run job %s", id)
		jobs[taskType] = job.GetName()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			op, err := jobsClient.DeleteJob(ctx, &runpb.DeleteJobRequest{Name: job.GetName()})
			if err == nil {
				_, err = op.Wait(ctx)
			}
			if err != nil {
				t.Errorf("live cleanup: error deleting Cloud Run job %s: %v", job.GetName(), err)
			}
		})
	}
	return jobsBackend{project: live.Project, region: live.Region, jobs: jobs, poll: 2 * time.Second,
		executions: func(t *testing.T, job string) []jobExecution {
			var out []jobExecution
			it := execs.ListExecutions(context.Background(), &runpb.ListExecutionsRequest{Parent: job})
			for {
				e, err := it.Next()
				if errors.Is(err, iterator.Done) {
					break
				}
				require.NoError(t, err)
				out = append(out, jobExecution{name: e.GetName(), cancelled: e.GetCancelledCount() > 0, done: e.GetCompletionTime() != nil})
			}
			return out
		}}
}

// TestExecutionsWithoutWorker is a contract: on the in-process control
// plane, and on Cloud Run itself under make test-live (docs/live-tests.md).
// A job whose container is not wf's worker ends without the task's result:
// Run says how the execution ended and that the worker never wrote, for a
// retry; a run whose context ends cancels its execution.
func TestExecutionsWithoutWorker(t *testing.T) {
	t.Parallel()
	livetest.Backends(t, fakeJobs, liveJobs, executionsWithoutWorker)
}

func executionsWithoutWorker(t *testing.T, c jobsBackend) {
	ts := &tasks{rows: map[uuid.UUID]wftype.Task{}}
	r, err := cloudrun.New(t.Context(), cloudrun.Config{Name: "gcp", Project: c.project, Region: c.region, Jobs: c.jobs,
		Tasks: ts, PollInterval: c.poll, ClientOptions: c.opts, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })

	for taskType, want := range map[string]string{"ok": "ended (succeeded", "fail": "ended (failed"} {
		_, err := r.Run(t.Context(), ts.claimed(taskType), reporters.Discard{})
		require.ErrorContains(t, err, want, taskType)
		require.ErrorContains(t, err, "without its worker writing the task's result", taskType)
		require.NotErrorIs(t, err, wftype.ErrFinishedRemotely)
		require.False(t, wftype.IsPermanent(err), "a lost execution is retried")
	}

	// A run whose context ends (its timeout, a shutdown) cancels its
	// execution once it has started.
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, ts.claimed("sleep"), reporters.Discard{})
		done <- err
	}()
	require.Eventually(t, func() bool { return len(c.executions(t, c.jobs["sleep"])) == 1 },
		5*time.Minute, c.poll, "the sleep job's execution did not start")
	requireCancelled(t, cancel, done, 5*time.Minute)
	require.Eventually(t, func() bool {
		e := c.executions(t, c.jobs["sleep"])
		return len(e) == 1 && e[0].cancelled && e[0].done
	}, 5*time.Minute, c.poll, "the execution was not cancelled")
}
