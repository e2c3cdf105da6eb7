package dispatch

import (
	"sort"

	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/runners"
)

// serving is what a dispatcher claims and how: the capability map (which
// runner runs each pair), the rules of those pairs and their task types.
// It is immutable; SetCapabilities swaps in another one whole, so that a
// claim reads one consistent set from its start to its tasks' start.
type serving struct {
	caps  runners.CapabilityMap
	rules execution.Rules
	types []string // sorted, each once
}

// newServing builds the serving of caps, each pair with its rule from
// rules (the defaults for a pair without one).
func newServing(caps runners.CapabilityMap, rules execution.Rules) *serving {
	sv := &serving{caps: caps, rules: execution.Rules{}}
	seen := map[string]bool{}
	for pair := range caps {
		r, ok := rules[pair]
		if !ok {
			r = execution.Rule{Pair: pair}
		}
		r.Pair = pair
		sv.rules[pair] = r.WithDefaults()
		if !seen[pair.TaskType] {
			seen[pair.TaskType] = true
			sv.types = append(sv.types, pair.TaskType)
		}
	}
	sort.Strings(sv.types)
	return sv
}

// SetCapabilities makes the dispatcher claim what caps can run, under
// rules, from its next claim on (the specs were reloaded). Tasks already
// claimed, running or waiting for a slot, keep the runner and rule of the
// claim that took them: they finish under the definitions they started
// with. The claim loop is woken, so a task of a type now served starts at
// once.
func (d *Dispatcher) SetCapabilities(caps runners.CapabilityMap, rules execution.Rules) {
	d.serving.Store(newServing(caps, rules))
	d.waker.Wake()
}
