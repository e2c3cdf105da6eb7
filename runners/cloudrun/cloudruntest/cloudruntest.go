// Package cloudruntest is an in-process fake of the Cloud Run Admin API v2
// control plane: the Jobs service's RunJob and the Executions service's
// GetExecution and CancelExecution, served over gRPC on a loopback port.
// The real Cloud Run clients talk to it through ClientOptions, so a test
// exercises everything but Google's control plane.
//
// Each RunJob starts an execution that an Executor carries out; the
// CommandExecutor runs a real program (the wf binary, as `wf exec
// --task-id …`) with the execution's container overrides, which is what a
// Cloud Run job's container would do.
package cloudruntest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"cloud.google.com/go/run/apiv2/runpb"
	"github.com/google/uuid"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Execution is what one RunJob asked for, as the container would see it.
type Execution struct {
	// Name is the execution's resource name: <job>/executions/<id>.
	Name string
	// Job is the job's resource name.
	Job string
	// Container is the overridden container's name ("" for the only one).
	Container string
	// Args are the container's arguments.
	Args []string
	// Env holds the overridden environment variables.
	Env map[string]string
	// Timeout is the task timeout asked for (zero: none).
	Timeout time.Duration
	// TaskCount is the number of tasks asked for.
	TaskCount int32
}

// Executor carries out one execution and returns nil when its task
// succeeded. ctx is cancelled when the execution is cancelled.
type Executor func(ctx context.Context, e Execution) error

// Server is the fake control plane. Create it with NewServer.
type Server struct {
	runpb.UnimplementedJobsServer
	runpb.UnimplementedExecutionsServer

	addr     string
	executor Executor
	jobs     map[string]bool // nil: every job exists

	mu         sync.Mutex
	executions map[string]*execution
	order      []string
	cancelled  []string
	wg         sync.WaitGroup
}

// execution is the state of one execution.
type execution struct {
	req       Execution
	created   time.Time
	cancel    context.CancelFunc
	done      bool
	completed time.Time
	outcome   string // "succeeded", "failed" or "cancelled"
	message   string
}

// Options configure a Server.
type Options struct {
	// Executor carries out executions. Required.
	Executor Executor
	// Jobs are the full resource names of the jobs that exist; RunJob on
	// another answers NotFound. Empty means every job exists.
	Jobs []string
}

// NewServer starts the fake on 127.0.0.1 and stops it when the test ends
// (after every execution has returned).
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Executor == nil {
		t.Fatal("cloudruntest: an Executor is required")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cloudruntest: error listening: %v", err)
	}
	s := &Server{addr: lis.Addr().String(), executor: opts.Executor, executions: map[string]*execution{}}
	if len(opts.Jobs) > 0 {
		s.jobs = map[string]bool{}
		for _, j := range opts.Jobs {
			s.jobs[j] = true
		}
	}
	gs := grpc.NewServer()
	runpb.RegisterJobsServer(gs, s)
	runpb.RegisterExecutionsServer(gs, s)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(func() {
		s.mu.Lock()
		for _, e := range s.executions {
			e.cancel()
		}
		s.mu.Unlock()
		s.wg.Wait()
		gs.Stop()
	})
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// ClientOptions point the Cloud Run clients at the fake, without
// credentials or TLS.
func (s *Server) ClientOptions() []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(s.addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// Executions returns the executions started so far, in order.
func (s *Server) Executions() []Execution {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Execution, len(s.order))
	for i, name := range s.order {
		out[i] = s.executions[name].req
	}
	return out
}

// Cancelled returns the names of the executions CancelExecution was called on.
func (s *Server) Cancelled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cancelled)
}

// RunJob implements runpb.JobsServer: it starts an execution and answers
// with its long-running operation, whose metadata is the execution.
func (s *Server) RunJob(_ context.Context, req *runpb.RunJobRequest) (*longrunningpb.Operation, error) {
	if s.jobs != nil && !s.jobs[req.GetName()] {
		return nil, status.Errorf(codes.NotFound, "Resource '%s' was not found", req.GetName())
	}
	e := Execution{
		Name: req.GetName() + "/executions/" + uuid.NewString()[:8],
		Job:  req.GetName(), Env: map[string]string{}, TaskCount: 1,
	}
	if o := req.GetOverrides(); o != nil {
		if o.GetTaskCount() > 0 {
			e.TaskCount = o.GetTaskCount()
		}
		if o.GetTimeout() != nil {
			e.Timeout = o.GetTimeout().AsDuration()
		}
		for _, c := range o.GetContainerOverrides() {
			e.Container = c.GetName()
			e.Args = slices.Clone(c.GetArgs())
			for _, v := range c.GetEnv() {
				e.Env[v.GetName()] = v.GetValue()
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if e.Timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), e.Timeout)
	}
	ex := &execution{req: e, created: time.Now(), cancel: cancel}
	s.mu.Lock()
	s.executions[e.Name] = ex
	s.order = append(s.order, e.Name)
	s.mu.Unlock()

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		err := s.executor(ctx, e)
		s.mu.Lock()
		defer s.mu.Unlock()
		if ex.done { // cancelled meanwhile
			return
		}
		ex.done, ex.completed = true, time.Now()
		switch {
		case err == nil:
			ex.outcome = "succeeded"
			ex.message = "Execution completed successfully in " + time.Since(ex.created).Round(time.Millisecond).String() + "."
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			ex.outcome, ex.message = "failed", "The configured timeout was reached."
		default:
			ex.outcome, ex.message = "failed", "Task failed: "+err.Error()
		}
	}()

	meta, err := anypb.New(s.snapshot(e.Name))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding metadata: %v", err)
	}
	return &longrunningpb.Operation{
		Name:     strings.SplitN(req.GetName(), "/jobs/", 2)[0] + "/operations/" + uuid.NewString(),
		Metadata: meta,
	}, nil
}

// GetExecution implements runpb.ExecutionsServer.
func (s *Server) GetExecution(_ context.Context, req *runpb.GetExecutionRequest) (*runpb.Execution, error) {
	if e := s.snapshot(req.GetName()); e != nil {
		return e, nil
	}
	return nil, status.Errorf(codes.NotFound, "Resource '%s' was not found", req.GetName())
}

// CancelExecution implements runpb.ExecutionsServer: the executor's context
// is cancelled and the execution ends cancelled at once.
func (s *Server) CancelExecution(_ context.Context, req *runpb.CancelExecutionRequest) (*longrunningpb.Operation, error) {
	s.mu.Lock()
	ex, ok := s.executions[req.GetName()]
	if ok {
		s.cancelled = append(s.cancelled, req.GetName())
		if !ex.done {
			ex.done, ex.completed, ex.outcome, ex.message = true, time.Now(), "cancelled", "The execution was cancelled."
		}
	}
	s.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Resource '%s' was not found", req.GetName())
	}
	ex.cancel()
	resp, err := anypb.New(s.snapshot(req.GetName()))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding response: %v", err)
	}
	return &longrunningpb.Operation{Name: req.GetName() + "/cancel", Done: true,
		Result: &longrunningpb.Operation_Response{Response: resp}}, nil
}

// snapshot renders an execution as the API would, or nil when unknown.
func (s *Server) snapshot(name string) *runpb.Execution {
	s.mu.Lock()
	defer s.mu.Unlock()
	ex, ok := s.executions[name]
	if !ok {
		return nil
	}
	e := &runpb.Execution{
		Name: name, Job: ex.req.Job, TaskCount: ex.req.TaskCount, Parallelism: 1,
		CreateTime: timestamppb.New(ex.created), StartTime: timestamppb.New(ex.created),
	}
	if !ex.done {
		e.RunningCount = ex.req.TaskCount
		e.Conditions = []*runpb.Condition{{Type: "Completed", State: runpb.Condition_CONDITION_PENDING}}
		return e
	}
	e.CompletionTime = timestamppb.New(ex.completed)
	state := runpb.Condition_CONDITION_FAILED
	switch ex.outcome {
	case "succeeded":
		e.SucceededCount, state = ex.req.TaskCount, runpb.Condition_CONDITION_SUCCEEDED
	case "cancelled":
		e.CancelledCount = ex.req.TaskCount
	default:
		e.FailedCount = ex.req.TaskCount
	}
	e.Conditions = []*runpb.Condition{{Type: "Completed", State: state, Message: ex.message}}
	return e
}

// CommandExecutor returns an Executor that runs program with the
// execution's args, in an environment of os.Environ(), then env, then the
// execution's overrides (later entries win): what the job's container would
// run. Its output goes to the test log; a non-zero exit fails the execution.
func CommandExecutor(t testing.TB, program string, env ...string) Executor {
	return func(ctx context.Context, e Execution) error {
		cmd := exec.CommandContext(ctx, program, e.Args...)
		cmd.Env = append(os.Environ(), env...)
		for _, k := range slices.Sorted(maps.Keys(e.Env)) {
			cmd.Env = append(cmd.Env, k+"="+e.Env[k])
		}
		// Cloud Run sends SIGTERM to a cancelled container, then SIGKILL.
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		t.Logf("cloudruntest: execution %s: %s %s: err=%v\n%s", e.Name, program, strings.Join(e.Args, " "), err, out)
		if err != nil {
			return fmt.Errorf("the container exited: %w", err)
		}
		return nil
	}
}
