// Package syncrunner runs SYNCHRONOUS tasks: the caller that submitted the
// task waits for its result instead of polling for it.
//
// It has no handlers of its own. A handler is the same code whichever mode
// calls it; the mode only decides who waits, the caller (SYNCHRONOUS) or
// nobody (ASYNCHRONOUS). So the synchronous runner wraps the handler runners
// (builtin, exec, http) and delegates to the one that would run the same task
// type in the background. This keeps one definition of each task type and
// means a type becomes callable synchronously without any extra wiring.
package syncrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// The runner implements the interface the dispatcher uses.
var _ runners.Runner = (*Runner)(nil)

// Runner runs SYNCHRONOUS tasks by delegating to the inner runner that can
// run the same task type ASYNCHRONOUSLY (the seed's SyncRunner, priority 100).
type Runner struct {
	inner []runners.Runner // sorted by priority, ties in the given order
}

// New returns a synchronous runner over the given handler runners. When two
// inner runners handle the same task type, the one with the lower priority
// number wins, as in runners.BuildCapabilityMap. Pass in-process or
// request-scoped runners only: a remote-job runner makes a caller wait for a
// container to start.
func New(inner ...runners.Runner) *Runner {
	sorted := slices.Clone(inner)
	slices.SortStableFunc(sorted, func(a, b runners.Runner) int { return a.Priority() - b.Priority() })
	return &Runner{inner: sorted}
}

// Name implements runners.Runner.
func (r *Runner) Name() string { return "sync" }

// Priority implements runners.Runner.
func (r *Runner) Priority() int { return 100 }

// CanHandle implements runners.Runner: SYNCHRONOUS tasks of a type that some
// inner runner can run ASYNCHRONOUSLY.
func (r *Runner) CanHandle(mode wftype.ExecutionMode, taskType string) bool {
	return mode == wftype.ModeSync && r.find(taskType) != nil
}

// Run implements runners.Runner by delegating to the inner runner for the
// task's type. The task is passed on unchanged (still SYNCHRONOUS): inner
// runners do not check the mode in Run.
func (r *Runner) Run(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	inner := r.find(task.TaskType)
	if inner == nil {
		return nil, wftype.Permanent(fmt.Errorf("error running synchronous task: no runner can handle task type %q", task.TaskType))
	}
	out, err := inner.Run(ctx, task, rep)
	if err != nil {
		return nil, fmt.Errorf("error running synchronous task with the %s runner: %w", inner.Name(), err)
	}
	return out, nil
}

// find returns the inner runner that would run taskType in the background.
func (r *Runner) find(taskType string) runners.Runner {
	for _, in := range r.inner {
		if in.CanHandle(wftype.ModeAsync, taskType) {
			return in
		}
	}
	return nil
}
