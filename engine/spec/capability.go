package spec

import (
	"cmp"
	"slices"

	"github.com/wfhq/wf/wftype"
)

// RunnerRef is one link of a capability's runner chain.
type RunnerRef struct {
	// Name is the runner spec's name, or "background" / "sync" for the local runners.
	Name     string
	Type     RunnerType
	Priority int
	// Job is the Cloud Run job of a cloudrun runner, "" otherwise.
	Job string
	// Handler is the handler kind a local runner runs, "" otherwise.
	Handler HandlerKind
}

// Capability says which runners can run the tasks of one (execution mode,
// task type) pair, in the order to try them: Runner specs by priority (then
// name), then the local runner of the mode.
type Capability struct {
	Mode     wftype.ExecutionMode
	TaskType string
	Runners  []RunnerRef
}

// clone returns a copy that shares nothing with c.
func (c Capability) clone() Capability {
	c.Runners = slices.Clone(c.Runners)
	return c
}

// buildCapabilities derives the capability map from the task types and runners.
func buildCapabilities(taskTypes []*TaskType, runners []*Runner) []Capability {
	ordered := slices.Clone(runners)
	slices.SortFunc(ordered, func(a, b *Runner) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.name, b.name))
	})
	caps := make([]Capability, 0, len(taskTypes))
	for _, t := range taskTypes {
		c := Capability{Mode: t.mode, TaskType: t.name}
		if t.mode == wftype.ModeAsync {
			for _, r := range ordered {
				if job, ok := r.job(t.name); ok {
					c.Runners = append(c.Runners, RunnerRef{Name: r.name, Type: r.typ, Priority: r.priority, Job: job})
				}
			}
		}
		local := RunnerRef{Name: string(RunnerBackground), Type: RunnerBackground, Priority: LocalRunnerPriority, Handler: t.handler.Kind}
		if t.mode == wftype.ModeSync {
			local.Name, local.Type = string(RunnerSync), RunnerSync
		}
		c.Runners = append(c.Runners, local)
		caps = append(caps, c)
	}
	slices.SortFunc(caps, func(a, b Capability) int {
		return cmp.Or(cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.TaskType, b.TaskType))
	})
	return caps
}
