// Package runnerset turns a compiled spec set into what the engine runs: the
// local runners (builtin, exec, http, and the synchronous runner over them),
// the (execution mode, task type) pairs, and the dispatcher's rules.
package runnerset

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/runners/exec"
	httprunner "github.com/wfhq/wf/runners/http"
	"github.com/wfhq/wf/runners/syncrunner"
)

// Options configure Build.
type Options struct {
	// Registry holds the builtin Go handlers; nil means builtin.NewRegistry().
	Registry *builtin.Registry
	// DefaultVisibilityTimeout applies to task types that set none.
	DefaultVisibilityTimeout time.Duration
	Logger                   *slog.Logger
	// Extra runners (remote jobs such as Cloud Run) join the chain by priority.
	Extra []runners.Runner
}

// Set is the runnable form of a spec set.
type Set struct {
	Runners []runners.Runner
	Pairs   []runners.Pair
	Rules   execution.Rules
	// Unserved are the task types whose builtin handler the registry marks
	// unserved (builtin.Registry.MarkUnserved: its service is not
	// configured), sorted by task type. They keep their pair and rule, but
	// no runner serves them, so this instance never claims their tasks.
	Unserved []Unserved
}

// Unserved is a task type this instance cannot run, and why.
type Unserved struct {
	TaskType string `json:"task_type"`
	// Handler is the builtin handler the task type names.
	Handler string `json:"handler"`
	// Reason names the missing setting.
	Reason string `json:"reason"`
}

// Build creates one runner per handler kind that some task type uses, the
// synchronous runner over them, and a rule per task type. A builtin task
// type whose handler the registry marks unserved gets no runner (Set.Unserved).
func Build(specs *spec.Set, opts Options) (*Set, error) {
	registry := opts.Registry
	if registry == nil {
		registry = builtin.NewRegistry()
	}
	builtins := map[string]string{}
	execs := map[string]exec.Handler{}
	endpoints := map[string]httprunner.Endpoint{}
	out := &Set{Rules: execution.Rules{}}
	for _, tt := range specs.TaskTypes() {
		h := tt.Handler()
		switch h.Kind {
		case spec.HandlerBuiltin:
			if reason, ok := registry.Unserved(h.Builtin); ok {
				out.Unserved = append(out.Unserved, Unserved{TaskType: tt.Name(), Handler: h.Builtin, Reason: reason})
			} else {
				builtins[tt.Name()] = h.Builtin
			}
		case spec.HandlerExec:
			execs[tt.Name()] = exec.Handler{Command: h.Exec.Command, Env: h.Exec.Env, Dir: h.Exec.Dir}
		case spec.HandlerHTTP:
			endpoints[tt.Name()] = httprunner.Endpoint{URL: h.HTTP.URL, Headers: h.HTTP.Headers, Timeout: h.HTTP.Timeout}
		default:
			return nil, fmt.Errorf("error building runners: task type %s has an unknown handler kind %q", tt.Name(), h.Kind)
		}
		pair := runners.Pair{Mode: tt.Mode(), TaskType: tt.Name()}
		out.Pairs = append(out.Pairs, pair)
		out.Rules[pair] = RuleFor(tt, opts.DefaultVisibilityTimeout)
	}
	var local []runners.Runner
	if len(builtins) > 0 {
		r, err := builtin.New(builtin.Config{Registry: registry, Handlers: builtins, Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		local = append(local, r)
	}
	if len(execs) > 0 {
		r, err := exec.New(exec.Config{Handlers: execs, Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		local = append(local, r)
	}
	if len(endpoints) > 0 {
		r, err := httprunner.New(httprunner.Config{Handlers: endpoints})
		if err != nil {
			return nil, err
		}
		local = append(local, r)
	}
	out.Runners = append(append(append(out.Runners, opts.Extra...), local...), syncrunner.New(local...))
	slices.SortFunc(out.Unserved, func(a, b Unserved) int { return strings.Compare(a.TaskType, b.TaskType) })
	return out, nil
}

// Rules compiles the rule of every task type in specs; defaultLease is the
// visibility timeout of a type that sets none (0: wf's default).
func Rules(specs *spec.Set, defaultLease time.Duration) execution.Rules {
	rules := execution.Rules{}
	for _, tt := range specs.TaskTypes() {
		rules[runners.Pair{Mode: tt.Mode(), TaskType: tt.Name()}] = RuleFor(tt, defaultLease)
	}
	return rules
}

// RuleFor compiles a task type's rule, its retry policy included, once.
func RuleFor(tt *spec.TaskType, defaultLease time.Duration) execution.Rule {
	r := tt.DispatchRule()
	// The spec's own, else the engine's configured default, else wf's.
	lease := cmp.Or(r.VisibilityTimeout, defaultLease, execution.DefaultLease)
	return execution.Rule{
		Pair:        runners.Pair{Mode: r.Mode, TaskType: r.TaskType},
		Lease:       lease,
		Timeout:     r.Timeout,
		PerInstance: r.Concurrency.PerInstance,
		Global:      r.Concurrency.Global,
		PerTenant:   r.Concurrency.PerTenant,
		RateStarts:  r.RateLimit.Starts, RatePerTenant: r.RateLimit.PerTenant, RateInterval: r.RateLimit.Interval,
		Backoff:    execution.BackoffFunc(r.Backoff),
		MaxSnoozes: r.MaxSnoozes,
	}
}

// Inactive maps unserved task types to why: the event consumer's
// events.ConsumerConfig.Inactive, whose subscriptions it skips.
func Inactive(unserved []Unserved) map[string]string {
	if len(unserved) == 0 {
		return nil
	}
	m := make(map[string]string, len(unserved))
	for _, u := range unserved {
		m[u.TaskType] = u.Reason
	}
	return m
}
