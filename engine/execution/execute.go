package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// ErrTimeout is the cause of a run cancelled because it exceeded its task
// type's timeout.
var ErrTimeout = errors.New("run timeout exceeded")

// finishTimeout bounds the reporters' Finish (writing a detailed report).
const finishTimeout = time.Minute

// Run is one run of a task, as Execute takes it.
type Run struct {
	// Task is the claimed task. Required.
	Task *wftype.Task
	// Runner runs it; nil fails the run permanently (no runner here can).
	Runner runners.Runner
	// Reporters builds the run's reporter; nil discards the records. A
	// remote runner gets none: its worker builds its own, and a local empty
	// report would replace the worker's.
	Reporters func(task *wftype.Task) (reporters.Reporter, error)
	// Timeout bounds the run; ctx is then cancelled with the cause
	// ErrTimeout. Zero: the caller bounds it (the dispatcher watches every
	// run's deadline with one timer and cancels ctx with ErrTimeout).
	Timeout time.Duration
	// Clock measures Timeout; nil means the wall clock.
	Clock clock.Clock
	// Logger receives a line for a panicking runner; nil means slog.Default().
	Logger *slog.Logger
}

// Execute runs one task and returns its outputs or its error. A panic in
// the runner becomes an error; an error or an end of ctx is joined with its
// cause (ErrTimeout, a lost lease, a shutdown), so the task's error says why
// it stopped. The reporters are finished whatever the outcome, on a context
// that outlives ctx (a cancelled run still writes its report), and what they
// return (a report URL) joins the outputs of a successful run.
func Execute(ctx context.Context, r Run) (outputs json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			log := r.Logger
			if log == nil {
				log = slog.Default()
			}
			log.ErrorContext(ctx, "runner panicked", "task_id", r.Task.ID, "task_type", r.Task.TaskType, "panic", p)
			outputs, err = nil, fmt.Errorf("runner panicked: %v", p)
		}
	}()
	if r.Runner == nil {
		return nil, wftype.Permanent(fmt.Errorf("no runner here can run %s tasks of type %s", r.Task.ExecutionMode, r.Task.TaskType))
	}
	var rep reporters.Reporter = reporters.Discard{}
	if r.Reporters != nil && !runners.RunsRemotely(r.Runner) {
		if rep, err = r.Reporters(r.Task); err != nil {
			return nil, fmt.Errorf("error creating reporters: %w", err)
		}
	}
	// Events the run emits name this task as their source.
	runCtx := wftype.WithSourceTask(ctx, r.Task.ID)
	if r.Timeout > 0 {
		var stop func()
		runCtx, stop = withTimeout(runCtx, r.Clock, r.Timeout)
		defer stop()
	}
	outputs, err = r.Runner.Run(runCtx, r.Task, rep)
	if err == nil && runCtx.Err() != nil {
		err = context.Cause(runCtx)
	}
	if cause := context.Cause(runCtx); err != nil && cause != nil && !errors.Is(err, cause) {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	var extra map[string]any
	if _, discard := rep.(reporters.Discard); !discard {
		finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		var ferr error
		if extra, ferr = rep.Finish(finishCtx); ferr != nil && err == nil {
			err = fmt.Errorf("error finishing reports: %w", ferr)
		}
	}
	if err == nil {
		outputs, err = MergeOutputs(outputs, extra)
	}
	return outputs, err
}

// withTimeout is context.WithTimeoutCause(ctx, d, ErrTimeout) with d
// measured on c (nil: the wall clock). stop releases its resources.
func withTimeout(ctx context.Context, c clock.Clock, d time.Duration) (context.Context, func()) {
	if _, wall := c.(clock.Real); wall || c == nil {
		return context.WithTimeoutCause(ctx, d, ErrTimeout)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	timer := c.NewTimer(d)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-timer.C():
			cancel(ErrTimeout)
		case <-runCtx.Done():
		}
	}()
	return runCtx, func() {
		timer.Stop()
		cancel(nil)
		<-done
	}
}
