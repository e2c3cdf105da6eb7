// Package cloudrun runs tasks as Google Cloud Run job executions: the
// seed's GcpCloudRunRunner, priority 10, ahead of the local runners (100).
//
// One Runner serves the task types of one `Runner` spec of type cloudrun,
// each mapped to a Cloud Run job. For a task it starts one execution of the
// job through the Cloud Run Admin API v2 (JobsClient.RunJob) with container
// overrides that make the container run the generic worker for that task:
//
//	args: exec --task-id <task id>
//	env:  WF_TASK_ID=<task id> WF_OWNER_ID=<the claim's owner id> WF_ATTEMPT=<the claim's attempt>
//
// The job's image runs wf as its entrypoint and carries the rest of wf's
// configuration (WF_DATABASE_URL, WF_SPECS, the report bucket) in the job's
// own environment. The worker, `wf exec`, takes the task over under the
// dispatcher's claim (owner id and attempt), runs it with its local handler
// and reporters, and writes its status, outputs and progress to the database
// itself.
//
// Meanwhile the dispatcher keeps the task ACTIVE with its heartbeats, and
// the runner polls the execution (ExecutionsClient.GetExecution). When the
// execution ends, the runner reads the task: if the worker wrote the result
// (the task is no longer ACTIVE under the claim) Run returns
// wftype.ErrFinishedRemotely and the dispatcher writes nothing; if the task
// is still ACTIVE under the claim, the worker never reported (the container
// crashed, could not start, or was not wf) and Run returns an error, so the
// task is retried or dead-lettered like any failed run. When the run's
// context ends (timeout, cancellation, shutdown) the runner cancels the
// execution (ExecutionsClient.CancelExecution), unless the worker has
// already written the result.
//
// A machine without a cloudrun Runner spec builds no such runner: its task
// types fall through to the local runner of their handler, by priority.
package cloudrun

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	run "cloud.google.com/go/run/apiv2"
	"cloud.google.com/go/run/apiv2/runpb"
	"github.com/google/uuid"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// DefaultPriority is the seed's priority of the Cloud Run runner: ahead of
// the local runners (100).
const DefaultPriority = 10

// DefaultPollInterval is how often a running execution is polled.
const DefaultPollInterval = 5 * time.Second

// startTimeout bounds the RunJob call.
const startTimeout = time.Minute

// Environment variables the runner sets on the worker's container.
const (
	// EnvTaskID carries the task's id (also in the args).
	EnvTaskID = "WF_TASK_ID"
	// EnvOwnerID carries the owner id of the dispatcher's claim: the worker
	// takes the task over under it.
	EnvOwnerID = "WF_OWNER_ID"
	// EnvAttempt carries the claim's attempt number, so a late worker of an
	// earlier attempt cannot take over a later one.
	EnvAttempt = "WF_ATTEMPT"
)

// TaskReader reads a task's row; *store.Store implements it. The runner
// reads the task when its execution ends, to tell whether the worker wrote
// the result.
type TaskReader interface {
	GetTask(ctx context.Context, id uuid.UUID) (wftype.Task, error)
}

// Config configures one Cloud Run runner (one Runner spec).
type Config struct {
	// Name is the Runner spec's name. Required.
	Name string
	// Priority orders the runner against the others; zero means DefaultPriority.
	Priority int
	// Project and Region locate the jobs. Required unless every job is a
	// full resource name.
	Project string
	Region  string
	// Jobs maps each task type this runner serves to its Cloud Run job: a
	// job name, or a full name projects/P/locations/R/jobs/J. Required.
	Jobs map[string]string
	// Tasks reads task rows. Required.
	Tasks TaskReader
	// Container names the job's container to override; empty means the
	// job's only container.
	Container string
	// PollInterval is how often a running execution is polled. Zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// ClientOptions are passed to the Cloud Run clients (an endpoint,
	// credentials). None means Google's endpoint with Application Default
	// Credentials.
	ClientOptions []option.ClientOption
	// Logger receives one line per execution started and ended; nil means
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults returns cfg with every unset field given its default; it is
// the one place where the runner's defaults live.
func (cfg Config) withDefaults() Config {
	cfg.Priority = cmp.Or(cfg.Priority, DefaultPriority)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.Jobs = maps.Clone(cfg.Jobs)
	return cfg
}

// validate reports every problem with a defaulted configuration at once.
func (cfg Config) validate() error {
	var errs []error
	if cfg.Name == "" {
		errs = append(errs, errors.New("the name is empty"))
	}
	if cfg.Tasks == nil {
		errs = append(errs, errors.New("no task reader"))
	}
	if len(cfg.Jobs) == 0 {
		errs = append(errs, errors.New("no task type is mapped to a job"))
	}
	if cfg.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("poll interval is %s, want more than zero", cfg.PollInterval))
	}
	for _, taskType := range slices.Sorted(maps.Keys(cfg.Jobs)) {
		job := cfg.Jobs[taskType]
		switch {
		case job == "":
			errs = append(errs, fmt.Errorf("task type %q: the job name is empty", taskType))
		case strings.Contains(job, "/") && !isJobResource(job):
			errs = append(errs, fmt.Errorf("task type %q: job %q is neither a job name nor projects/P/locations/R/jobs/J", taskType, job))
		case !strings.Contains(job, "/") && (cfg.Project == "" || cfg.Region == ""):
			errs = append(errs, fmt.Errorf("task type %q: job %q needs the runner's project and region", taskType, job))
		}
	}
	return errors.Join(errs...)
}

// isJobResource reports whether s is projects/P/locations/R/jobs/J.
func isJobResource(s string) bool {
	p := strings.Split(s, "/")
	return len(p) == 6 && p[0] == "projects" && p[2] == "locations" && p[4] == "jobs" && p[1] != "" && p[3] != "" && p[5] != ""
}

// The runner implements the interfaces the dispatcher uses.
var (
	_ runners.Runner = (*Runner)(nil)
	_ runners.Remote = (*Runner)(nil)
)

// Runner runs ASYNCHRONOUS tasks as Cloud Run job executions. Close it when
// done. It is safe for concurrent use.
type Runner struct {
	cfg   Config
	jobs  *run.JobsClient
	execs *run.ExecutionsClient
}

// New validates cfg and opens the Cloud Run clients. Without
// cfg.ClientOptions it needs Application Default Credentials.
func New(ctx context.Context, cfg Config) (*Runner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error building Cloud Run runner %q: %w", cfg.Name, err)
	}
	jobs, err := run.NewJobsClient(ctx, cfg.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("error building Cloud Run runner %q: error creating the jobs client: %w", cfg.Name, err)
	}
	execs, err := run.NewExecutionsClient(ctx, cfg.ClientOptions...)
	if err != nil {
		_ = jobs.Close()
		return nil, fmt.Errorf("error building Cloud Run runner %q: error creating the executions client: %w", cfg.Name, err)
	}
	return &Runner{cfg: cfg, jobs: jobs, execs: execs}, nil
}

// Close closes the Cloud Run clients.
func (r *Runner) Close() error {
	if err := errors.Join(r.jobs.Close(), r.execs.Close()); err != nil {
		return fmt.Errorf("error closing Cloud Run runner %q: %w", r.cfg.Name, err)
	}
	return nil
}

// Name implements runners.Runner: "cloudrun:" and the Runner spec's name.
func (r *Runner) Name() string { return "cloudrun:" + r.cfg.Name }

// Priority implements runners.Runner.
func (r *Runner) Priority() int { return r.cfg.Priority }

// CanHandle implements runners.Runner: ASYNCHRONOUS tasks of a type in the job map.
func (r *Runner) CanHandle(mode wftype.ExecutionMode, taskType string) bool {
	_, ok := r.cfg.Jobs[taskType]
	return ok && mode == wftype.ModeAsync
}

// RunsRemotely implements runners.Remote: the worker in the container
// reports records and writes the result itself.
func (r *Runner) RunsRemotely() bool { return true }

// Job returns the full resource name of the job that runs taskType.
func (r *Runner) Job(taskType string) (string, bool) {
	job, ok := r.cfg.Jobs[taskType]
	if !ok {
		return "", false
	}
	if isJobResource(job) {
		return job, true
	}
	return fmt.Sprintf("projects/%s/locations/%s/jobs/%s", r.cfg.Project, r.cfg.Region, job), true
}

// Run implements runners.Runner; the package comment describes the
// protocol. rep receives nothing: the worker has reporters of its own.
func (r *Runner) Run(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	job, ok := r.Job(task.TaskType)
	if !ok {
		return nil, wftype.Permanent(fmt.Errorf("error running task on Cloud Run: no job is mapped to task type %q", task.TaskType))
	}
	if task.OwnerID == nil || *task.OwnerID == "" {
		return nil, fmt.Errorf("error running task on Cloud Run: task %s has no owner id to hand to its worker", task.ID)
	}
	// The call is not cut short by ctx: an execution that started while the
	// answer was on its way must be known, so that it can be cancelled.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	op, err := r.jobs.RunJob(startCtx, r.runJobRequest(ctx, job, task))
	if err != nil {
		return nil, fmt.Errorf("error starting Cloud Run job %s: %w", job, err)
	}
	exec, err := op.Metadata()
	if err != nil || exec == nil || exec.GetName() == "" {
		return nil, fmt.Errorf("error starting Cloud Run job %s: the operation %s names no execution (%v)", job, op.Name(), err)
	}
	name := exec.GetName()
	log := r.cfg.Logger.With("task_id", task.ID, "task_type", task.TaskType, "execution", name)
	log.InfoContext(ctx, "started Cloud Run execution")
	return nil, r.wait(ctx, task, name, log)
}

// runJobRequest asks for one execution of job that runs `wf exec` for task,
// under the dispatcher's claim, bounded by the run's deadline.
func (r *Runner) runJobRequest(ctx context.Context, job string, task *wftype.Task) *runpb.RunJobRequest {
	env := func(name, value string) *runpb.EnvVar {
		return &runpb.EnvVar{Name: name, Values: &runpb.EnvVar_Value{Value: value}}
	}
	overrides := &runpb.RunJobRequest_Overrides{
		ContainerOverrides: []*runpb.RunJobRequest_Overrides_ContainerOverride{{
			Name: r.cfg.Container,
			Args: []string{"exec", "--task-id", task.ID.String()},
			Env: []*runpb.EnvVar{
				env(EnvTaskID, task.ID.String()),
				env(EnvOwnerID, *task.OwnerID),
				env(EnvAttempt, strconv.Itoa(task.Attempts)),
			},
		}},
		TaskCount: 1,
	}
	if deadline, ok := ctx.Deadline(); ok {
		// Cloud Run counts whole seconds; at least one.
		overrides.Timeout = durationpb.New(max(time.Until(deadline).Truncate(time.Second), time.Second))
	}
	return &runpb.RunJobRequest{Name: job, Overrides: overrides}
}

// wait polls the execution until it ends or ctx does, then decides what
// Run returns.
func (r *Runner) wait(ctx context.Context, task *wftype.Task, name string, log *slog.Logger) error {
	tick := time.NewTicker(r.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return r.stop(ctx, task, name, log)
		case <-tick.C:
		}
		exec, err := r.execs.GetExecution(ctx, &runpb.GetExecutionRequest{Name: name})
		switch {
		case err != nil && ctx.Err() != nil:
			continue // the select above stops the execution
		case status.Code(err) == codes.NotFound:
			return fmt.Errorf("error waiting for Cloud Run execution %s: it no longer exists: %w", name, err)
		case err != nil:
			log.WarnContext(ctx, "polling the Cloud Run execution failed; retrying", "err", err)
			continue
		case exec.GetCompletionTime() == nil:
			continue
		}
		return r.ended(ctx, task, exec, log)
	}
}

// ended decides the result of a run whose execution ended: the worker's
// result stands (ErrFinishedRemotely) unless the task is still ACTIVE under
// the claim, in which case the worker never reported and the run failed.
func (r *Runner) ended(ctx context.Context, task *wftype.Task, exec *runpb.Execution, log *slog.Logger) error {
	outcome := describe(exec)
	cur, err := r.cfg.Tasks.GetTask(ctx, task.ID)
	if err != nil {
		return fmt.Errorf("error reading task %s after Cloud Run execution %s ended (%s): %w", task.ID, exec.GetName(), outcome, err)
	}
	if !stillClaimed(task, &cur) {
		log.InfoContext(ctx, "Cloud Run execution ended; its worker wrote the result", "outcome", outcome, "status", cur.Status)
		return fmt.Errorf("the Cloud Run execution %s ended (%s): %w", exec.GetName(), outcome, wftype.ErrFinishedRemotely)
	}
	log.WarnContext(ctx, "Cloud Run execution ended without its worker writing the result", "outcome", outcome)
	return fmt.Errorf("the Cloud Run execution %s ended (%s) without its worker writing the task's result", exec.GetName(), outcome)
}

// stop ends a run whose context is done: it cancels the execution unless
// the worker has already written the result, which then stands.
func (r *Runner) stop(ctx context.Context, task *wftype.Task, name string, log *slog.Logger) error {
	cause := context.Cause(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cur, err := r.cfg.Tasks.GetTask(sctx, task.ID)
	if err == nil && wroteResult(task, &cur) {
		log.InfoContext(ctx, "run stopped after its worker wrote the result; the execution is left to end", "status", cur.Status)
		return fmt.Errorf("the Cloud Run execution %s: %w", name, wftype.ErrFinishedRemotely)
	}
	if _, cerr := r.execs.CancelExecution(sctx, &runpb.CancelExecutionRequest{Name: name}); cerr != nil && status.Code(cerr) != codes.NotFound {
		log.ErrorContext(ctx, "cancelling the Cloud Run execution failed; its worker stops when it loses the lease", "err", cerr)
	} else {
		log.InfoContext(ctx, "cancelled the Cloud Run execution", "cause", cause)
	}
	return fmt.Errorf("the Cloud Run execution %s was cancelled: %w", name, cause)
}

// stillClaimed reports whether cur is still ACTIVE under the claim task was
// run with (same owner, same attempt).
func stillClaimed(task, cur *wftype.Task) bool {
	return cur.Status == wftype.StatusActive && cur.OwnerID != nil && task.OwnerID != nil &&
		*cur.OwnerID == *task.OwnerID && cur.Attempts == task.Attempts
}

// wroteResult reports whether the worker of this claim has written the
// task's outcome: an end other than a cancellation, or a retry it counted,
// whether or not the retry has been claimed again since (on a busy machine
// the next claim may come before this run sees its execution end, and the
// dispatcher then stops this run).
func wroteResult(task, cur *wftype.Task) bool {
	switch cur.Status {
	case wftype.StatusCompleted, wftype.StatusFailed, wftype.StatusDeadLetter:
		return true
	case wftype.StatusPending, wftype.StatusActive:
		return cur.RetryCount > task.RetryCount
	}
	return false
}

// describe summarises how an execution ended, with the message of its
// Completed condition when there is one.
func describe(e *runpb.Execution) string {
	var what string
	switch {
	case e.GetCancelledCount() > 0:
		what = "cancelled"
	case e.GetFailedCount() > 0:
		what = "failed"
	case e.GetSucceededCount() > 0 && e.GetSucceededCount() >= e.GetTaskCount():
		what = "succeeded"
	default:
		what = "ended"
	}
	for _, c := range e.GetConditions() {
		if c.GetType() == "Completed" && c.GetMessage() != "" {
			return what + ": " + c.GetMessage()
		}
	}
	return what
}
