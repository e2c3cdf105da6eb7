package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// Config configures the builtin runner.
type Config struct {
	// Registry holds the handlers; nil means NewRegistry().
	Registry *Registry
	// Handlers maps each task type this runner serves to a handler name in
	// Registry. The engine fills it from the compiled specs.
	Handlers map[string]string
	// Logger receives the stack of a panicking handler; nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults returns cfg with every unset field given its default; it is
// the one place where the runner's defaults live.
func (cfg Config) withDefaults() Config {
	if cfg.Registry == nil {
		cfg.Registry = NewRegistry()
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return cfg
}

// The runner implements the interface the dispatcher uses.
var _ runners.Runner = (*Runner)(nil)

// Runner runs ASYNCHRONOUS tasks with registered Go handlers (the seed's
// BackgroundRunner, priority 100).
type Runner struct {
	handlers map[string]Handler // task type → handler, resolved once by New
	names    map[string]string  // task type → handler name, for messages
	logger   *slog.Logger
}

// New returns a runner for the task types in cfg.Handlers. It resolves every
// handler name once, so that a spec naming an unknown handler is an error at
// start-up rather than at the first task.
func New(cfg Config) (*Runner, error) {
	cfg = cfg.withDefaults()
	r := &Runner{
		handlers: make(map[string]Handler, len(cfg.Handlers)),
		names:    make(map[string]string, len(cfg.Handlers)),
		logger:   cfg.Logger,
	}
	var errs []error
	for taskType, name := range cfg.Handlers {
		h, ok := cfg.Registry.Lookup(name)
		if !ok {
			errs = append(errs, fmt.Errorf("task type %q names builtin handler %q, which is not registered (known: %s)",
				taskType, name, strings.Join(cfg.Registry.Names(), ", ")))
			continue
		}
		r.handlers[taskType] = h
		r.names[taskType] = name
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("error building builtin runner: %w", err)
	}
	return r, nil
}

// Name implements runners.Runner.
func (r *Runner) Name() string { return "builtin" }

// Priority implements runners.Runner: in-process background work, after any
// remote-job runner (10).
func (r *Runner) Priority() int { return 100 }

// CanHandle implements runners.Runner: ASYNCHRONOUS tasks of a configured type.
func (r *Runner) CanHandle(mode wftype.ExecutionMode, taskType string) bool {
	_, ok := r.handlers[taskType]
	return ok && mode == wftype.ModeAsync
}

// Run implements runners.Runner. It does not check the task's mode, so the
// synchronous runner can delegate to it. A panicking handler becomes a
// retryable error carrying the panic value (a bug needs a person, which is
// what DEAD_LETTER after the retries is for); the stack goes to the log only.
func (r *Runner) Run(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (outputs json.RawMessage, err error) {
	h, ok := r.handlers[task.TaskType]
	if !ok {
		return nil, wftype.Permanent(fmt.Errorf("error running builtin handler: no handler is configured for task type %q", task.TaskType))
	}
	name := r.names[task.TaskType]
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("error running builtin handler %q: %w", name, err)
	}
	defer func() {
		if v := recover(); v != nil {
			r.logger.ErrorContext(ctx, "builtin handler panicked",
				"handler", name, "task_type", task.TaskType, "task_id", task.ID,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			outputs, err = nil, fmt.Errorf("error running builtin handler %q: handler panicked: %v", name, v)
		}
	}()
	outputs, err = h(ctx, task, rep)
	if err != nil {
		return nil, fmt.Errorf("error running builtin handler %q: %w", name, err)
	}
	return outputs, nil
}
