// Package runners declares the Runner interface that every way of executing a
// task implements (in-process Go handlers, a subprocess, an HTTP endpoint, a
// remote job), and the priority chain the dispatcher builds its capability map
// from. Runners never import the engine: they see the task row from wftype and
// report records through reporters.Reporter.
package runners

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// Runner executes tasks of the (execution mode, task type) pairs it can handle.
type Runner interface {
	// Name identifies the runner in logs and in the capability map.
	Name() string
	// Priority orders runners: when two can handle the same pair, the lower
	// number wins (the seed's chain: cloudrun 10, background 100, sync 100).
	Priority() int
	// CanHandle reports whether this runner can execute tasks of the pair.
	CanHandle(mode wftype.ExecutionMode, taskType string) bool
	// Run executes one task until it ends or ctx is done. It returns the task's
	// outputs (a JSON value, or nil) or an error; wftype.Permanent errors fail
	// the task without a retry. Per-record results go to rep.
	Run(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error)
}

// Remote is implemented by runners whose tasks run in another process that
// builds its own reporters and writes the task's result to the database
// itself (`wf exec` in a Cloud Run job). The dispatcher gives their runs no
// reporters of its own, so an empty local report never replaces the
// worker's, and it writes nothing when Run returns wftype.ErrFinishedRemotely.
type Remote interface {
	Runner
	// RunsRemotely reports whether the runner's tasks report their records
	// and results from another process; true for every remote runner.
	RunsRemotely() bool
}

// RunsRemotely reports whether r is a Remote runner whose tasks report
// from another process.
func RunsRemotely(r Runner) bool {
	rr, ok := r.(Remote)
	return ok && rr.RunsRemotely()
}

// Pair is one (execution mode, task type) combination a runner can serve.
type Pair struct {
	Mode     wftype.ExecutionMode
	TaskType string
}

// CapabilityMap says which runner serves each pair, chosen by priority.
type CapabilityMap map[Pair]Runner

// BuildCapabilityMap asks every runner, in priority order (ties keep the given
// order), which of the pairs it can handle; the first runner that can wins.
// Pairs no runner can handle are left out, so the dispatcher never claims them.
func BuildCapabilityMap(all []Runner, pairs []Pair) CapabilityMap {
	ordered := append([]Runner(nil), all...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].Priority() < ordered[j].Priority() })
	m := make(CapabilityMap, len(pairs))
	for _, p := range pairs {
		for _, r := range ordered {
			if r.CanHandle(p.Mode, p.TaskType) {
				m[p] = r
				break
			}
		}
	}
	return m
}
