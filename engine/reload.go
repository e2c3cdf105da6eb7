package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/maintenance/scheduler"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/runners"
)

// Reloading the specs without a restart (Reload). What a spec set builds —
// the runners and rules of its task types, the capability map the
// dispatcher claims by, the client's checks, the workflows, and the
// services it calls for (the event consumer and the workflow step pass on
// every instance, the scheduler and the workflow timeouts on the leader) —
// is built anew from the new set, checked whole, then swapped in at once:
// a set that fails to build leaves the old one in place. The spec services
// run in groups (runSpecGroup) that restart on each swap. Tasks already
// claimed keep the runner and rule they were claimed with.

// specServices builds the services set calls for: the event consumer on
// every instance (unless NoEventConsumer; the subscriptions to the task
// types of unserved inactive) and the step pass and waits of its
// workflows; the scheduler (when any Schedule exists) and the workflow
// timeouts on the leader.
func (e *Engine) specServices(set *spec.Set, wfs *workflow.Workflows, unserved []runnerset.Unserved) (every, leading []Service, err error) {
	cfg := e.cfg
	if !cfg.NoEventConsumer {
		cons, err := events.NewConsumer(events.ConsumerConfig{Store: e.store, Client: e.client, Specs: set, Runs: wfs, Owner: cfg.Owner, Logger: cfg.Logger,
			UnmatchedGrace: cfg.UnmatchedEventGrace, TracerProvider: cfg.TracerProvider, Inactive: runnerset.Inactive(unserved)})
		if err != nil {
			return nil, nil, fmt.Errorf("error creating engine: %w", err)
		}
		every = append(every, Service{Name: "event consumer", Run: func(ctx context.Context) error {
			cons.Run(ctx, e.bus)
			return nil
		}})
	}
	if len(set.Schedules()) > 0 {
		sched, err := scheduler.New(scheduler.Config{Store: e.store, Client: e.client, Runs: wfs, Schedules: set.Schedules(), Clock: cfg.Clock, Logger: cfg.Logger})
		if err != nil {
			return nil, nil, fmt.Errorf("error creating engine: %w", err)
		}
		leading = append(leading, Service{Name: "scheduler", Run: func(ctx context.Context) error { sched.Run(ctx); return nil }})
	}
	if len(set.Workflows()) > 0 {
		leading = append(leading, Service{Name: "workflow timeouts", Run: e.runWorkflowTimeouts})
		every = append(every, Service{Name: "workflow step pass", Run: e.runStepPass},
			Service{Name: "workflow waits", Run: e.runWaits})
	}
	return every, leading, nil
}

// runSpecGroup runs the spec services of the current set, those of every
// instance or the leader's, and starts the new set's in their place at
// each reload, until ctx ends.
func (e *Engine) runSpecGroup(leader bool) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for {
			e.mu.Lock()
			svcs, reloaded := e.specEvery, e.reloaded
			if leader {
				svcs = e.specLeading
			}
			e.mu.Unlock()
			gctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			e.start(gctx, &wg, svcs)
			select {
			case <-ctx.Done():
			case <-reloaded:
			}
			cancel()
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
		}
	}
}

// checkLeases refuses rules under which one late heartbeat would cost a
// lease: a run whose lease ran out by its own reckoning is cancelled.
func (e *Engine) checkLeases(rules execution.Rules) error {
	for pair, r := range rules {
		if r.Lease > 0 && r.Lease < 2*e.cfg.HeartbeatInterval {
			return fmt.Errorf("error creating engine: task type %s has a visibility timeout of %s, less than twice the heartbeat interval %s: one late heartbeat would lose its lease; raise visibility_timeout or lower heartbeat_interval",
				pair.TaskType, r.Lease, e.cfg.HeartbeatInterval)
		}
	}
	return nil
}

// ReloadResult says what a successful Reload changed.
type ReloadResult struct {
	// TaskTypes are the task types served after the reload.
	TaskTypes []string
	// Added and Removed are the task types served now and not before, and
	// before and not now.
	Added, Removed []string
}

// Reload makes the engine follow set from now on, without a restart: it
// builds everything set calls for and, only when all of it builds, swaps
// it in at once — the dispatcher's claims (and so the served task types),
// the client's checks, the rules, the runners, the workflows and the spec
// services (event consumer, scheduler, workflow passes), which restart.
// Tasks already claimed finish under the definitions they were claimed
// with. On error nothing changed: the old set keeps running. Reloads are
// one at a time.
func (e *Engine) Reload(ctx context.Context, set *spec.Set) (ReloadResult, error) {
	if e.cfg.Specs == nil || set == nil {
		return ReloadResult{}, errors.New("error reloading the specs: the engine was built without specs")
	}
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	rs, err := runnerset.Build(set, runnerset.Options{
		Registry: e.registry, DefaultVisibilityTimeout: e.cfg.DefaultVisibilityTimeout, Logger: e.cfg.Logger, Extra: e.cfg.Runners,
	})
	if err != nil {
		return ReloadResult{}, fmt.Errorf("error reloading the specs: %w", err)
	}
	if err := e.checkLeases(rs.Rules); err != nil {
		return ReloadResult{}, fmt.Errorf("error reloading the specs: %w", err)
	}
	wfs, err := workflow.New(workflow.Config{Specs: set, Client: e.client, Emitter: e.emitter, Clock: e.cfg.Clock, Logger: e.cfg.Logger})
	if err != nil {
		return ReloadResult{}, fmt.Errorf("error reloading the specs: %w", err)
	}
	pairs := make([]runners.Pair, 0, len(rs.Rules))
	for p := range rs.Rules {
		pairs = append(pairs, p)
	}
	caps := runners.BuildCapabilityMap(rs.Runners, pairs)
	unserved := dropServedBy(caps, rs.Unserved)
	every, leading, err := e.specServices(set, wfs, unserved)
	if err != nil {
		return ReloadResult{}, fmt.Errorf("error reloading the specs: %w", err)
	}
	before := e.dispatcher.TaskTypes()

	e.mu.Lock()
	e.specs, e.runners, e.rules, e.capability, e.workflows, e.unserved = set, rs.Runners, rs.Rules, caps, wfs, unserved
	e.specEvery, e.specLeading = every, leading
	e.client.SetSpecs(set)
	e.dispatcher.SetCapabilities(caps, rs.Rules)
	close(e.reloaded)
	e.reloaded = make(chan struct{})
	e.mu.Unlock()

	after := e.dispatcher.TaskTypes()
	res := ReloadResult{TaskTypes: after}
	for _, t := range after {
		if !slices.Contains(before, t) {
			res.Added = append(res.Added, t)
		}
	}
	for _, t := range before {
		if !slices.Contains(after, t) {
			res.Removed = append(res.Removed, t)
		}
	}
	if e.cfg.OnReload != nil {
		e.cfg.OnReload(set)
	}
	if err := e.declareWorkflows(ctx); err != nil && ctx.Err() == nil {
		e.cfg.Logger.Warn("workflow declaration", "error", err)
	}
	e.cfg.Logger.Info("specs reloaded", "task_types", len(after), "added", res.Added, "removed", res.Removed,
		"workflows", len(set.Workflows()), "schedules", len(set.Schedules()), "subscriptions", len(set.Subscriptions()))
	return res, nil
}

// Specs is the spec set the engine follows now (nil when built without).
func (e *Engine) Specs() *spec.Set {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.specs
}

// Reloaded is closed at the next successful Reload.
func (e *Engine) Reloaded() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reloaded
}
