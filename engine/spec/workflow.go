package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"reflect"

	"github.com/expr-lang/expr"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Workflow defaults and bounds.
const (
	// DefaultWorkflowTimeout is a workflow's timeout when its spec sets none.
	DefaultWorkflowTimeout = 24 * time.Hour
	minWorkflowTimeout     = time.Second
	maxWorkflowTimeout     = 30 * 24 * time.Hour
	// DefaultForEachConcurrency is how many items of a for_each step run at
	// once when the step sets no concurrency.
	DefaultForEachConcurrency = 100
	// DefaultMaxItems is the most items a for_each step may have when the
	// step sets no max_items.
	DefaultMaxItems = 10_000
)

// Upstream-skipped policies: what a step does when a step it depends on was
// skipped (by its when condition, or because its own upstream was).
const (
	// OnSkippedSkip skips the step too (the default).
	OnSkippedSkip = "skip"
	// OnSkippedRun runs the step anyway; the skipped step's outputs are nil.
	OnSkippedRun = "run"
)

// Workflow is a compiled Workflow spec: named steps, each an ordinary task of
// a task type, run in the order their depends_on allows. It is immutable.
type Workflow struct {
	named
	inputsRaw  json.RawMessage
	inputs     *jsonschema.Schema
	inputsDoc  rawSchemas
	timeout    time.Duration
	startRoles []string
	// signalRoles may send a run's approval steps their signals.
	signalRoles []string
	steps       []*Step // in topological order, ties by name
	stepIndex   map[string]*Step
	// outputs are the run's outputs, evaluated when it completes
	// (workflow_child.go); outputsType types them for a parent's steps.
	outputNames []string // sorted
	outputs     map[string]*program
	outputsType reflect.Type
}

// InputSchema is the JSON Schema of a run's inputs, as JSON.
func (w *Workflow) InputSchema() json.RawMessage { return bytes.Clone(w.inputsRaw) }

// Timeout is how long a run may take from its start.
func (w *Workflow) Timeout() time.Duration { return w.timeout }

// StartRoles lists the token roles that may start a run over the API.
func (w *Workflow) StartRoles() []string { return slices.Clone(w.startRoles) }

// CanStart reports whether a token of role may start a run.
func (w *Workflow) CanStart(role string) bool { return slices.Contains(w.startRoles, role) }

// CanSignal reports whether a token of role may send a run's approval
// steps their signals (api.signal, default client and admin).
func (w *Workflow) CanSignal(role string) bool { return slices.Contains(w.signalRoles, role) }

// SignalRoles lists the token roles that may send signals to a run.
func (w *Workflow) SignalRoles() []string { return slices.Clone(w.signalRoles) }

// Steps lists the steps in topological order (a step after every step it
// depends on), ties broken by name.
func (w *Workflow) Steps() []*Step { return slices.Clone(w.steps) }

// Step returns the step called name.
func (w *Workflow) Step(name string) (*Step, bool) {
	s, ok := w.stepIndex[name]
	return s, ok
}

// ValidateInputs checks a run's inputs against the workflow's inputs schema.
func (w *Workflow) ValidateInputs(v any) error {
	doc, err := toJSONValue(v)
	if err != nil {
		return fmt.Errorf("error validating inputs of workflow %s: %w", w.name, err)
	}
	return validateAgainst(w.inputs, w.inputsDoc, doc)
}

// Step is one step of a Workflow. It is immutable.
type Step struct {
	named
	taskType    *TaskType
	child       *Workflow // the workflow a child workflow step starts
	dependsOn   []string  // sorted
	dependants  []string  // sorted
	when        *program
	onSkipped   string
	inputNames  []string // sorted
	inputs      map[string]*program
	forEach     *program
	concurrency int
	maxItems    int
	maxRetries  *int
	priority    *int
	wait        *Wait // a sleep, wait_for_event or approval step; nil for a task step
}

// TaskType is the task type the step's tasks are of; nil for a wait step
// (Kind).
func (s *Step) TaskType() *TaskType { return s.taskType }

// DependsOn lists the steps that must end before this one starts, sorted.
func (s *Step) DependsOn() []string { return slices.Clone(s.dependsOn) }

// Dependants lists the steps that depend on this one directly, sorted.
func (s *Step) Dependants() []string { return slices.Clone(s.dependants) }

// WhenExpr is the source of the step's when condition, "" if none.
func (s *Step) WhenExpr() string { return s.when.text() }

// ForEachExpr is the source of the step's for_each expression, "" if the
// step runs once.
func (s *Step) ForEachExpr() string { return s.forEach.text() }

// IsForEach reports whether the step runs once per item of a list.
func (s *Step) IsForEach() bool { return s.forEach != nil }

// OnUpstreamSkipped is OnSkippedSkip or OnSkippedRun.
func (s *Step) OnUpstreamSkipped() string { return s.onSkipped }

// Concurrency is how many items of a for_each step run at once.
func (s *Step) Concurrency() int { return s.concurrency }

// MaxItems is the most items a for_each step may have.
func (s *Step) MaxItems() int { return s.maxItems }

// InputExprs maps each input name to the source of its expression.
func (s *Step) InputExprs() map[string]string {
	out := make(map[string]string, len(s.inputs))
	for k, p := range s.inputs {
		out[k] = p.source
	}
	return out
}

// MaxRetries is the step's retries: its override, else its task type's.
func (s *Step) MaxRetries() int { return s.orTaskType(s.maxRetries, (*TaskType).MaxRetries) }

// Priority is the step's claim priority: its override, else its task type's.
func (s *Step) Priority() int { return s.orTaskType(s.priority, (*TaskType).Priority) }

// orTaskType is the step's override when set, else of its task type, else
// 0 (a wait step or a child workflow step has no task).
func (s *Step) orTaskType(override *int, of func(*TaskType) int) int {
	if override != nil {
		return *override
	}
	if s.taskType == nil {
		return 0
	}
	return of(s.taskType)
}

// text is a program's source, "" for none.
func (p *program) text() string {
	if p == nil {
		return ""
	}
	return p.source
}

// StepState is what a step's expressions see of an upstream step.
type StepState struct {
	// Status is the step's status (COMPLETED, SKIPPED, ...).
	Status string
	// Outputs are the step's task's outputs (a list of every item's
	// outputs, in item order, for a for_each step; nil when skipped).
	Outputs any
}

// RunEnv is what a run's step expressions see: the run and the steps that
// have ended.
type RunEnv struct {
	RunID      string
	SchemaName string
	Inputs     map[string]any
	Steps      map[string]StepState
}

// values is the environment of a step's programs; item is set for the
// items of a for_each step.
func (e RunEnv) values(item any, index int) map[string]any {
	steps := make(map[string]any, len(e.Steps))
	for name, st := range e.Steps {
		steps[name] = map[string]any{"status": st.Status, "outputs": st.Outputs}
	}
	inputs := e.Inputs
	if inputs == nil {
		inputs = map[string]any{}
	}
	return map[string]any{
		"run_id": e.RunID, "schema_name": e.SchemaName, "inputs": inputs, "steps": steps,
		"item": item, "item_index": index,
	}
}

// runtimeEnv is the environment a step's programs are compiled against to
// run (the typed environment of the checks only proves them). item is left
// out: it may be any value, and a nil in this map would type it nil, which
// has no fields (compileRuntime allows it undeclared).
var runtimeEnv = map[string]any{
	"run_id": "", "schema_name": "", "inputs": map[string]any{}, "steps": map[string]any{},
	"item_index": 0,
}

// compileRuntime compiles a step's expression to run, against runtimeEnv.
func compileRuntime(source string, result resultKind) (*program, error) {
	return compileProgram(source, runtimeEnv, result, expr.AllowUndefinedVariables())
}

// Ready evaluates the step's when condition: false means the step is
// skipped. A step without one is always ready.
func (s *Step) Ready(env RunEnv) (bool, error) {
	if s.when == nil {
		return true, nil
	}
	out, err := s.when.run(env.values(nil, 0))
	if err != nil {
		return false, fmt.Errorf("error evaluating when of step %s: %w", s.name, err)
	}
	return out.(bool), nil
}

// Items evaluates a for_each step's list. It fails when the expression does
// not return a list or returns more than MaxItems items.
func (s *Step) Items(env RunEnv) ([]any, error) {
	if s.forEach == nil {
		return nil, fmt.Errorf("error evaluating for_each of step %s: the step has none", s.name)
	}
	out, err := s.forEach.run(env.values(nil, 0))
	if err != nil {
		return nil, fmt.Errorf("error evaluating for_each of step %s: %w", s.name, err)
	}
	items, ok := out.([]any)
	if !ok {
		if out == nil {
			return nil, nil
		}
		b, err := json.Marshal(out)
		if err == nil {
			err = json.Unmarshal(b, &items)
		}
		if err != nil {
			return nil, fmt.Errorf("error evaluating for_each of step %s: %q returned %s, expected a list", s.name, s.forEach.source, typeName(out))
		}
	}
	if len(items) > s.maxItems {
		return nil, fmt.Errorf("error evaluating for_each of step %s: %d items, more than max_items (%d)", s.name, len(items), s.maxItems)
	}
	return items, nil
}

// runAll runs the programs named names, in that order, on vals, and returns
// their values by name; an error names the failed program as the kind
// ("input") NAME of owner ("step x").
func runAll(progs map[string]*program, names []string, vals map[string]any, kind, owner string) (map[string]any, error) {
	out := make(map[string]any, len(progs))
	for _, name := range names {
		v, err := progs[name].run(vals)
		if err != nil {
			return nil, fmt.Errorf("error evaluating %s %s of %s: %w", kind, name, owner, err)
		}
		out[name] = v
	}
	return out, nil
}

// Inputs evaluates the step's inputs (for item number index of a for_each
// step; item nil otherwise), checks them against its task type's schema and
// returns them as JSON.
func (s *Step) Inputs(env RunEnv, item any, index int) (json.RawMessage, error) {
	vals := env.values(item, index)
	inputs, err := runAll(s.inputs, s.inputNames, vals, "input", "step "+s.name)
	if err != nil {
		return nil, err
	}
	if s.child != nil {
		if err := s.child.ValidateInputs(inputs); err != nil {
			return nil, fmt.Errorf("error starting the child run of workflow %s of step %s: %w", s.child.name, s.name, err)
		}
	} else if err := s.taskType.ValidateInputs(inputs); err != nil {
		return nil, fmt.Errorf("error creating the %s task of step %s: %w", s.taskType.name, s.name, err)
	}
	b, err := json.Marshal(inputs)
	if err != nil {
		return nil, fmt.Errorf("error encoding the inputs of step %s: %w", s.name, err)
	}
	return b, nil
}
