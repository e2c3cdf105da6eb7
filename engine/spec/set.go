package spec

import (
	"slices"

	"github.com/wfhq/wf/wftype"
)

// Set is a compiled, valid set of specs: the one value the engine runs from.
// It is immutable and safe for concurrent use; accessors return copies of
// slices and maps, and the values they point to are immutable too.
type Set struct {
	files         []string
	taskTypes     []*TaskType // sorted by name
	taskTypeIndex map[string]*TaskType
	subscriptions []*Subscription // sorted by name
	schedules     []*Schedule     // sorted by name
	runners       []*Runner       // sorted by priority, then name
	capabilities  []Capability    // sorted by mode, then task type
	workflows     []*Workflow     // sorted by name
}

// Files lists the spec files the set was compiled from, sorted.
func (s *Set) Files() []string { return slices.Clone(s.files) }

// TaskTypes lists the task types, sorted by name.
func (s *Set) TaskTypes() []*TaskType { return slices.Clone(s.taskTypes) }

// TaskType returns the task type called name.
func (s *Set) TaskType(name string) (*TaskType, bool) {
	t, ok := s.taskTypeIndex[name]
	return t, ok
}

// Subscriptions lists the subscriptions, sorted by name.
func (s *Set) Subscriptions() []*Subscription { return slices.Clone(s.subscriptions) }

// SubscriptionsFor lists the subscriptions an event of type eventType
// concerns, sorted by name.
func (s *Set) SubscriptionsFor(eventType string) []*Subscription {
	var out []*Subscription
	for _, sub := range s.subscriptions {
		if sub.Matches(eventType) {
			out = append(out, sub)
		}
	}
	return out
}

// Schedules lists the schedules, sorted by name.
func (s *Set) Schedules() []*Schedule { return slices.Clone(s.schedules) }

// Workflows lists the workflows, sorted by name.
func (s *Set) Workflows() []*Workflow { return slices.Clone(s.workflows) }

// Workflow returns the workflow called name.
func (s *Set) Workflow(name string) (*Workflow, bool) {
	for _, w := range s.workflows {
		if w.name == name {
			return w, true
		}
	}
	return nil, false
}

// Runners lists the Runner specs, sorted by priority, then name.
func (s *Set) Runners() []*Runner { return slices.Clone(s.runners) }

// Capabilities is the capability map: for each (execution mode, task type)
// pair, its runner chain. Sorted by mode, then task type.
func (s *Set) Capabilities() []Capability {
	out := make([]Capability, len(s.capabilities))
	for i, c := range s.capabilities {
		out[i] = c.clone()
	}
	return out
}

// Capability returns the runner chain of one pair.
func (s *Set) Capability(mode wftype.ExecutionMode, taskType string) (Capability, bool) {
	for _, c := range s.capabilities {
		if c.Mode == mode && c.TaskType == taskType {
			return c.clone(), true
		}
	}
	return Capability{}, false
}

// DispatchRules lists the dispatcher rule of every task type, sorted by task type.
func (s *Set) DispatchRules() []DispatchRule {
	out := make([]DispatchRule, len(s.taskTypes))
	for i, t := range s.taskTypes {
		out[i] = t.DispatchRule()
	}
	return out
}
