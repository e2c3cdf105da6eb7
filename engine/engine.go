// Package engine is wf's composition root: New builds one wf instance from
// a database pool and the compiled specs — the store, the client, the
// event emitter and consumer, the runners and rules of the task types, the
// dispatcher, the janitor, leader election, the scheduler and maintenance,
// and the metrics they report to — and Run runs it until its context ends.
// `wf run` is Load, open, engine.New, Run; `wf serve` and `wf exec` build
// the same engine and use its parts (the API's synchronous runs, the
// worker) without running its dispatcher. Any number of engines share one
// PostgreSQL; each claims only what its runners can run.
//
// A program that embeds wf builds its engine the same way: its own Go
// handlers go in Config.Registry, it enqueues in its own transactions with
// Client().EnqueueTx and emits events with Emitter() (see the examples).
package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/leader"
	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/maintenance/janitor"
	"github.com/wfhq/wf/engine/metrics"
	"github.com/wfhq/wf/engine/presence"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/secretbox"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// Defaults of the engine's intervals and sizes, named once.
const (
	DefaultName              = "wf"
	DefaultSlots             = 100
	DefaultPollInterval      = time.Second
	DefaultHeartbeatInterval = 30 * time.Second
	DefaultPartitionsAhead   = 3
)

// Config configures an Engine. Zero fields take the defaults noted.
type Config struct {
	// Name is the service name (NAME): instances with one name elect one
	// leader. Default DefaultName.
	Name string
	// Owner identifies this instance on claimed rows. Default NewOwnerID().
	Owner string
	// Pool is the database. Required.
	Pool *pgxpool.Pool
	// CatalogPool is the catalog's database when it is not Pool's
	// (catalog.database_url): the engine's store then reads the tenant
	// registry there (store.WithCatalog), and Bind's store gives it as
	// Catalog(). Default Pool.
	CatalogPool *pgxpool.Pool
	// Secrets encrypts and decrypts the webhook secrets in the database;
	// nil keeps them clear (wf reads them from secrets.keys or
	// WF_SECRET_KEY, see secretbox.ParseKeys).
	Secrets *secretbox.Keyring
	// SessionConnConfig opens the leader election's connection, which holds
	// session state (the advisory lock, LISTEN) for as long as it leads: a
	// connection straight to PostgreSQL when Pool goes through a
	// transaction-mode pooler. Default the pool's connection settings.
	SessionConnConfig *pgx.ConnConfig
	// Channels are the NOTIFY channel names. Default the seed's.
	Channels store.Channels
	// Specs are the compiled specs. New builds from them the runners of
	// their task types (builtin handlers from Registry, exec, http, and
	// the synchronous runner), the rules, the event consumer (unless
	// NoEventConsumer), the scheduler (when any Schedule exists) and
	// maintenance. Without Specs, Runners, Pairs and Rules say what the
	// engine runs, and it runs no consumer, scheduler or maintenance (an
	// engine over hand-made runners, as tests build).
	Specs *spec.Set
	// NoEventConsumer: this instance consumes no events. By default every
	// instance with Specs consumes the outbox, whether or not any
	// Subscription exists: an event no subscription wants is deleted (once
	// it is UnmatchedEventGrace old), so wf's own events (task.failed,
	// workflow.*, catalog.*) never pile up PENDING and retention can drop
	// their month partitions. Set it on an
	// instance whose spec set is not the fleet's (its consumer would settle
	// events the others' subscriptions want), or when another program
	// reads tasks.events; events then stay PENDING until a consumer runs.
	NoEventConsumer bool
	// UnmatchedEventGrace: the event consumer deletes an event none of
	// Specs' subscriptions matches only once it is this old, and hands a
	// younger one back until then, so that an instance deployed with a
	// new Subscription consumes it meanwhile (a rolling deploy). Default
	// events.DefaultUnmatchedGrace (15m).
	UnmatchedEventGrace time.Duration
	// Registry holds the builtin Go handlers the specs name. Default
	// builtin.NewRegistry(). New never changes it (see Bind).
	Registry *builtin.Registry
	// Bind, when set, registers the handlers that need the engine's own
	// store and client (the catalog's) into a clone of Registry before the
	// runners are built; its error fails New. Dependencies are bound here,
	// at start-up, never read from a task run's context.
	Bind func(reg *builtin.Registry, st *store.Store, cl *client.Client) error
	// Files, when set, checks the inputs task types declare as files when
	// a task is created (client.Client.WithFiles): a local location
	// outside the tenant's folder is refused there. Nil: only the handlers
	// check, when the task runs.
	Files client.Files
	// Runners: with Specs, extra runners (remote jobs such as Cloud Run)
	// that join the local ones by priority; without, every runner.
	Runners []runners.Runner
	// Pairs are every (execution mode, task type) the engine serves; only
	// without Specs.
	Pairs []runners.Pair
	// Rules per pair; only without Specs (with Specs they are compiled).
	Rules execution.Rules
	// DefaultVisibilityTimeout is the lease of a task type whose spec sets
	// none. Default execution.DefaultLease.
	DefaultVisibilityTimeout time.Duration
	// Slots is how many tasks run at once. Default DefaultSlots.
	Slots int
	// ClaimAhead is at most how many claimed tasks may wait for a slot
	// (dispatch.Config.ClaimAhead): default 8 × Slots, -1 off.
	ClaimAhead int
	// Unfair turns fair claiming off: a claim then takes the highest
	// priority, then oldest due tasks, whoever's they are. By default each
	// claim batch is shared among the tenants with due tasks by weight
	// (store.Fairness).
	Unfair bool
	// TenantWeights weigh tenants (schema_name) in fair claims; a tenant
	// not named weighs 1.
	TenantWeights map[string]float64
	// PollInterval: follower polls and leader sweeps. Default DefaultPollInterval.
	PollInterval time.Duration
	// HeartbeatInterval. Default DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// JanitorInterval throttles the janitor. Default 30s.
	JanitorInterval time.Duration
	// Grace is how long running tasks may finish on shutdown. Default 20s.
	Grace time.Duration
	// PartitionsAhead is how many months of partitions are created at start
	// and kept ahead by maintenance. Default DefaultPartitionsAhead.
	PartitionsAhead int
	// MaintenanceInterval is how often maintenance runs (leader only). Default 1h.
	MaintenanceInterval time.Duration
	// Retention says how long finished rows are kept (maintenance).
	Retention maintenance.Retention
	// SnapshotInterval is how often the leader refreshes the PENDING counts
	// snapshot the overview reads. Default maintenance.DefaultSnapshotInterval.
	SnapshotInterval time.Duration
	// Reporters builds the reporters of a task run (nil: records are dropped).
	Reporters func(task *wftype.Task) (reporters.Reporter, error)
	// Metrics receive claims and outcomes. Default metrics.New on the store.
	Metrics *metrics.Metrics
	// Observer, when set, is told about claims and outcomes too (a
	// benchmark's timing).
	Observer execution.Observer
	// Services run on every instance for the engine's lifetime, beside the
	// ones New builds.
	Services []Service
	// SpecSource, when set, reads the specs again (the spec files, as
	// `wf run` read them at start): ReloadSpecs, which a SIGHUP or
	// `wf reload` calls, swaps in what it returns. Nil: reloads fail.
	SpecSource func() (*spec.Set, error)
	// OnReload, when set, is called after each successful Reload with the
	// new set (wf run rebuilds the HTTP API's routes for it).
	OnReload func(*spec.Set)
	// LeaderServices run while this instance leads, beside the ones New builds.
	LeaderServices []Service
	Clock          clock.Clock
	Logger         *slog.Logger
	// TracerProvider traces enqueues, runs and consumed events
	// (internal/tracing: tracing.FromEnv builds it from the OTEL_*
	// variables). Nil means tracing is off.
	TracerProvider trace.TracerProvider
}

// Service is the one shape of a long-running part of the engine: a name,
// and Run, which returns when its context ends (an error if it failed).
// Each one's stop is logged by name.
type Service struct {
	Name string
	Run  func(ctx context.Context) error
}

// Engine is one wf instance.
type Engine struct {
	cfg        Config
	bus        *signalbus.Bus
	store      *store.Store
	client     *client.Client
	emitter    *events.Emitter
	metrics    *metrics.Metrics
	rules      execution.Rules
	runners    []runners.Runner
	unserved   []runnerset.Unserved
	capability runners.CapabilityMap
	// instanceRuns counts this instance's runs against each type's
	// concurrency.per_instance: the dispatcher's and the API's
	// SYNCHRONOUS runs' (InstanceRuns).
	instanceRuns *execution.InstanceRuns
	dispatcher   *dispatch.Dispatcher
	elector      *leader.Elector
	janitor      *janitor.Janitor
	workflows    *workflow.Workflows
	services     []Service // every instance
	leading      []Service // leader only

	// mu guards what Reload swaps (reload.go): specs, rules, runners,
	// capability, workflows, the spec services and reloaded.
	mu       sync.Mutex
	reloadMu sync.Mutex // one Reload at a time
	specs    *spec.Set
	registry *builtin.Registry // the handlers, bound once (Bind)
	// specEvery and specLeading are the services the specs call for, run
	// by runSpecGroup and rebuilt by Reload.
	specEvery, specLeading []Service
	reloaded               chan struct{} // closed at each Reload
	served                 servedState   // served.go
	reloadRequests         chan string   // ids of `wf reload` requests (served.go)
}

// fairness is the claims' store.Fairness, nil when Unfair.
func (cfg Config) fairness() *store.Fairness {
	if cfg.Unfair {
		return nil
	}
	return &store.Fairness{Weights: cfg.TenantWeights}
}

// NewOwnerID returns an id naming this process: host, pid and a random suffix.
func NewOwnerID() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", cmp.Or(host, "wf"), os.Getpid(), hex.EncodeToString(b))
}

// New validates cfg and builds the engine and every part of it.
func New(cfg Config) (*Engine, error) {
	if cfg.Pool == nil {
		return nil, errors.New("error creating engine: no database pool")
	}
	cfg.Name = cmp.Or(cfg.Name, DefaultName)
	cfg.Owner = cmp.Or(cfg.Owner, NewOwnerID())
	if cfg.Channels.TaskQueued == "" {
		cfg.Channels = store.DefaultChannels
	}
	cfg.Slots = cmp.Or(cfg.Slots, DefaultSlots)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, DefaultPollInterval)
	cfg.HeartbeatInterval = cmp.Or(cfg.HeartbeatInterval, DefaultHeartbeatInterval)
	cfg.PartitionsAhead = cmp.Or(cfg.PartitionsAhead, DefaultPartitionsAhead)
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	e := &Engine{cfg: cfg, bus: signalbus.New(), store: store.New(cfg.Pool).WithChannels(cfg.Channels).WithSecrets(cfg.Secrets),
		specs: cfg.Specs, reloaded: make(chan struct{}), reloadRequests: make(chan string, 8)}
	if cfg.CatalogPool != nil {
		e.store = e.store.WithCatalog(store.New(cfg.CatalogPool).WithChannels(cfg.Channels))
	}
	e.emitter = events.NewEmitter(e.store)
	if cfg.TracerProvider != nil {
		e.emitter = e.emitter.WithTracing()
	}
	if err := e.buildRunners(); err != nil {
		return nil, err
	}
	if err := e.buildWorkflows(); err != nil {
		return nil, err
	}
	if err := e.checkLeases(e.rules); err != nil {
		return nil, err
	}
	e.metrics = cfg.Metrics
	if e.metrics == nil {
		var types []string
		for pair := range e.rules {
			types = append(types, pair.TaskType)
		}
		e.metrics = metrics.New(metrics.Config{Store: e.store, TaskTypes: types, Limits: e.rules.Limits(), Logger: cfg.Logger})
	}
	e.capability = runners.BuildCapabilityMap(e.runners, e.pairs())
	e.unserved = e.dropServed(e.unserved)
	e.instanceRuns = execution.NewInstanceRuns()
	var err error
	e.dispatcher, err = dispatch.New(dispatch.Config{
		Store: e.store, Owner: cfg.Owner, Capabilities: e.capability, Rules: e.rules, InstanceRuns: e.instanceRuns,
		Slots: cfg.Slots, ClaimAhead: cfg.ClaimAhead, HeartbeatInterval: cfg.HeartbeatInterval, Grace: cfg.Grace, Fair: cfg.fairness(),
		Bus: e.bus, Reporters: cfg.Reporters, Clock: cfg.Clock, Logger: cfg.Logger, Observer: e.observer(),
		TracerProvider: cfg.TracerProvider,
	})
	if err != nil {
		return nil, err
	}
	e.janitor = janitor.New(janitor.Config{
		Store: e.store, Interval: cfg.JanitorInterval, Clock: cfg.Clock, Logger: cfg.Logger,
		Backoff: func(taskType string) func(int) time.Duration { return e.Rules().Backoff(taskType) },
	})
	if err := e.buildServices(); err != nil {
		return nil, err
	}
	e.elector, err = leader.New(leader.Config{
		Name: cfg.Name, ConnConfig: cmp.Or(cfg.SessionConnConfig, cfg.Pool.Config().ConnConfig), Owner: cfg.Owner, Channels: cfg.Channels,
		PollInterval: cfg.PollInterval, Clock: cfg.Clock, Bus: e.bus, TaskTypes: e.dispatcher.TaskTypes,
		OnElected: e.lead, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	e.metrics.SetSources(metrics.Sources{
		IsLeader: e.elector.IsLeader,
		Slots:    func() (int, int) { return e.dispatcher.Running(), e.dispatcher.Slots() },
	})
	return e, nil
}

// buildRunners builds the client, the runners and the rules: from the
// specs (with the handlers Bind adds), or as the configuration gives them.
func (e *Engine) buildRunners() error {
	cfg := e.cfg
	if cfg.Specs == nil {
		e.client = client.New(e.store, &spec.Set{}).WithTracerProvider(cfg.TracerProvider)
		e.runners, e.rules = cfg.Runners, cfg.Rules
		if e.rules == nil {
			e.rules = execution.Rules{}
		}
		for _, p := range cfg.Pairs {
			if _, ok := e.rules[p]; !ok {
				e.rules[p] = execution.Rule{Pair: p}
			}
		}
		return nil
	}
	e.client = client.New(e.store, cfg.Specs).WithTracerProvider(cfg.TracerProvider)
	if cfg.Files != nil {
		e.client = e.client.WithFiles(cfg.Files)
	}
	reg := cfg.Registry
	if reg == nil {
		reg = builtin.NewRegistry()
	}
	reg = reg.Clone()
	if cfg.Bind != nil {
		if err := cfg.Bind(reg, e.store, e.client); err != nil {
			return fmt.Errorf("error creating engine: %w", err)
		}
	}
	e.registry = reg
	set, err := runnerset.Build(cfg.Specs, runnerset.Options{
		Registry: reg, DefaultVisibilityTimeout: cfg.DefaultVisibilityTimeout, Logger: cfg.Logger, Extra: cfg.Runners,
	})
	if err != nil {
		return fmt.Errorf("error creating engine: %w", err)
	}
	e.runners, e.rules, e.unserved = set.Runners, set.Rules, set.Unserved
	return nil
}

// buildWorkflows builds the workflow runtime from the specs and, when they
// declare any workflow, installs its step hook in the store, so that every
// FinishTasks that ends a step advances its run in the same transaction.
// Without workflows FinishTasks stays one statement outside a transaction
// for plain tasks; the ends of other instances' step tasks it runs are
// recorded for their step pass (runStepPass).
func (e *Engine) buildWorkflows() error {
	if e.cfg.Specs == nil {
		return nil
	}
	wfs, err := workflow.New(workflow.Config{
		Specs: e.cfg.Specs, Client: e.client, Emitter: e.emitter, Clock: e.cfg.Clock, Logger: e.cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("error creating engine: %w", err)
	}
	e.workflows = wfs
	if len(e.cfg.Specs.Workflows()) > 0 {
		// The workflows of the set the engine follows now (Reload). A
		// reload that declares the first workflow relies on the step pass.
		e.store = e.store.WithStepHook(func(ctx context.Context, tx *store.Store, finished []store.FinishedStep) error {
			return e.Workflows().Advance(ctx, tx, finished)
		})
	}
	return nil
}

// Workflows starts, shows, cancels and retries workflow runs; nil for an
// engine built without specs.
func (e *Engine) Workflows() *workflow.Workflows {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.workflows
}

// runStepPass advances, every poll interval of wall time, the runs of the
// engine's workflows whose step tasks ended where they could not be
// advanced (workflow.Workflows.Sweep): on an instance whose specs do not
// declare the workflow, through a remote worker or `wf exec`. Every
// instance with workflows runs it; they share the work by SKIP LOCKED.
func (e *Engine) runStepPass(ctx context.Context) error {
	return e.workflowPass(ctx, e.cfg.PollInterval, "workflow step pass", "workflow runs advanced from steps ended elsewhere", "task_ends",
		func() (int, error) { return e.Workflows().Sweep(ctx, e.store, 500) })
}

// runWorkflowTimeouts fails the runs that passed their deadline, every
// janitor interval of wall time (leader only).
func (e *Engine) runWorkflowTimeouts(ctx context.Context) error {
	return e.workflowPass(ctx, cmp.Or(e.cfg.JanitorInterval, 30*time.Second), "workflow timeouts", "workflow runs timed out", "runs",
		func() (int, error) { return e.Workflows().Expire(ctx, e.store, 100) })
}

// workflowPass calls pass every interval of wall time until ctx ends; a
// failure is logged as a warning under name, a pass that changed n > 0
// things at info as did, with n as key.
func (e *Engine) workflowPass(ctx context.Context, every time.Duration, name, did, key string, pass func() (int, error)) error {
	fails := e.newFailureLog(name)
	clock.Every(ctx, clock.Real{}, every, func() bool {
		n, err := pass()
		switch {
		case err != nil && ctx.Err() == nil:
			fails.failed(err)
			return true
		case n > 0:
			e.cfg.Logger.Info(did, key, n)
		}
		if err == nil {
			fails.ok()
		}
		return true
	})
	return nil
}

// observer is what the dispatcher tells about claims and outcomes: the
// metrics, and the configured observer.
func (e *Engine) observer() execution.Observer {
	if e.cfg.Observer == nil {
		return e.metrics
	}
	return tee{e.metrics, e.cfg.Observer}
}

// tee tells two observers.
type tee [2]execution.Observer

// Claimed implements execution.Observer.
func (t tee) Claimed(tasks []wftype.Task, took time.Duration) {
	t[0].Claimed(tasks, took)
	t[1].Claimed(tasks, took)
}

// Finished implements execution.Observer.
func (t tee) Finished(task *wftype.Task, status wftype.TaskStatus, ran time.Duration) {
	t[0].Finished(task, status, ran)
	t[1].Finished(task, status, ran)
}

// Heartbeat implements execution.LeaseObserver for those of the two that do.
func (t tee) Heartbeat(tasks int, took time.Duration) {
	for _, o := range t {
		if lo, ok := o.(execution.LeaseObserver); ok {
			lo.Heartbeat(tasks, took)
		}
	}
}

// LeaseLost implements execution.LeaseObserver for those of the two that do.
func (t tee) LeaseLost(task *wftype.Task) {
	for _, o := range t {
		if lo, ok := o.(execution.LeaseObserver); ok {
			lo.LeaseLost(task)
		}
	}
}

// pairs lists the pairs the engine serves: those of its rules.
func (e *Engine) pairs() []runners.Pair {
	pairs := make([]runners.Pair, 0, len(e.rules))
	for p := range e.rules {
		pairs = append(pairs, p)
	}
	return pairs
}

// buildServices builds the services the specs call for: the event consumer
// on every instance (unless NoEventConsumer: it creates the subscribed
// tasks and deletes the events nobody wants), the scheduler (leader only) when any Schedule exists, and
// maintenance (leader only); the PENDING counts snapshot (leader only) and
// the janitor always; then the configured ones.
func (e *Engine) buildServices() error {
	cfg := e.cfg
	if cfg.Specs != nil {
		var err error
		if e.specEvery, e.specLeading, err = e.specServices(cfg.Specs, e.workflows, e.unserved); err != nil {
			return err
		}
		e.services = append(e.services, Service{Name: "spec services", Run: e.runSpecGroup(false)},
			Service{Name: "reload requests", Run: e.runReloadRequests})
		e.leading = append(e.leading, Service{Name: "spec services (leader)", Run: e.runSpecGroup(true)})
		sup, err := maintenance.New(maintenance.Config{
			Store: e.store, Interval: cfg.MaintenanceInterval, PartitionsAhead: cfg.PartitionsAhead,
			Retention: cfg.Retention, Clock: cfg.Clock, Logger: cfg.Logger,
		})
		if err != nil {
			return fmt.Errorf("error configuring maintenance: %w", err)
		}
		e.leading = append(e.leading, Service{Name: "maintenance", Run: func(ctx context.Context) error { sup.Run(ctx); return nil }})
	}
	snap, err := maintenance.NewSnapshotter(maintenance.SnapshotConfig{
		Store: e.store, Interval: cfg.SnapshotInterval, Clock: cfg.Clock, Logger: cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("error creating engine: %w", err)
	}
	e.leading = append(e.leading, Service{Name: "pending snapshot", Run: func(ctx context.Context) error { snap.Run(ctx); return nil }})
	e.services = append(e.services, Service{Name: "janitor", Run: e.runJanitor}, Service{Name: "workflow declaration", Run: e.runDeclarations},
		Service{Name: "served task types", Run: e.runServed})
	if e.workflows != nil {
		e.leading = append(e.leading, Service{Name: "undeclared workflows", Run: e.runUndeclaredRuns})
	}
	e.services = append(e.services, cfg.Services...)
	e.leading = append(e.leading, cfg.LeaderServices...)
	return nil
}

// Store is the engine's store (every SQL statement), notifying on its channels.
func (e *Engine) Store() *store.Store { return e.store }

// Client enqueues tasks, checked against the engine's specs: Enqueue in a
// transaction of its own, EnqueueTx inside the caller's pgx.Tx.
func (e *Engine) Client() *client.Client { return e.client }

// Emitter writes events to the outbox (Emit, or EmitTx inside the caller's
// transaction).
func (e *Engine) Emitter() *events.Emitter { return e.emitter }

// Metrics are the metrics the engine reports to (serve them with Handler).
func (e *Engine) Metrics() *metrics.Metrics { return e.metrics }

// Rules are the rules of every pair the engine serves.
func (e *Engine) Rules() execution.Rules {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rules
}

// Runners are the engine's runners, remote ones included.
func (e *Engine) Runners() []runners.Runner {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runners
}

// InstanceRuns is this instance's count of runs against each task type's
// concurrency.per_instance, which its dispatcher takes room from: give it
// to whatever else runs tasks in this process (the HTTP API's SYNCHRONOUS
// runs, api.Config.InstanceRuns), so that the cap holds for them all.
func (e *Engine) InstanceRuns() *execution.InstanceRuns { return e.instanceRuns }

// Capabilities returns which runner serves each pair.
func (e *Engine) Capabilities() runners.CapabilityMap {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.capability
}

// Bus is the engine's signal bus.
func (e *Engine) Bus() *signalbus.Bus { return e.bus }

// IsLeader reports whether this instance leads its service.
func (e *Engine) IsLeader() bool { return e.elector.IsLeader() }

// LeaderChanged is closed at the next change of leadership.
func (e *Engine) LeaderChanged() <-chan struct{} { return e.elector.Changed() }

// Owner is this instance's id.
func (e *Engine) Owner() string { return e.cfg.Owner }

// HoldPresence keeps, until ctx ends, the connection that lists this
// instance among the dashboard's instances when it does not Run (wf serve
// builds an engine for its parts): see engine/presence.
func (e *Engine) HoldPresence(ctx context.Context) error {
	return presence.Hold(ctx, presence.Config{
		Service: e.cfg.Name, Owner: e.cfg.Owner, Logger: e.cfg.Logger,
		ConnConfig: cmp.Or(e.cfg.SessionConnConfig, e.cfg.Pool.Config().ConnConfig),
	})
}

// Run runs the engine until ctx ends, then shuts down gracefully (see
// dispatch.Dispatcher.Run) and returns.
func (e *Engine) Run(ctx context.Context) error {
	if _, err := e.store.EnsurePartitions(ctx, e.cfg.Clock.Now(), e.cfg.PartitionsAhead); err != nil {
		return fmt.Errorf("error preparing partitions: %w", err)
	}
	// Before the election connection: the leader's pass of undeclared
	// workflows waits for any instance it sees connected without one.
	if err := e.declareWorkflows(ctx); err != nil {
		return err
	}
	e.cfg.Logger.Info("wf engine starting", "service", e.cfg.Name, "owner", e.cfg.Owner,
		"task_types", len(e.dispatcher.TaskTypes()), "slots", e.cfg.Slots)
	e.logUnserved()

	bg, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBg()
	every := append([]Service{{Name: "leader election", Run: func(ctx context.Context) error { e.elector.Run(ctx); return nil }}}, e.services...)
	var wg sync.WaitGroup
	e.start(bg, &wg, every)
	err := e.dispatcher.Run(ctx)
	e.cfg.Logger.Info("service stopped", "service", "dispatcher")
	stopBg()
	wg.Wait()
	e.cfg.Logger.Info("wf engine stopped", "owner", e.cfg.Owner)
	return err
}

// start runs each service on a goroutine of its own, logging its stop by
// name (and its error).
func (e *Engine) start(ctx context.Context, wg *sync.WaitGroup, services []Service) {
	for _, svc := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.Run(ctx); err != nil && ctx.Err() == nil {
				e.cfg.Logger.Error("service stopped with an error", "service", svc.Name, "err", err)
				return
			}
			e.cfg.Logger.Debug("service stopped", "service", svc.Name)
		}()
	}
}

// runJanitor runs the throttled janitor on dispatcher wake-ups.
func (e *Engine) runJanitor(ctx context.Context) error {
	w := signalbus.NewWaker()
	unsub := e.bus.Subscribe(signalbus.TaskQueued, func(string) { w.Wake() })
	defer unsub()
	w.Wake()
	fails := e.newFailureLog("janitor run")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.C():
		}
		if ran, _, err := e.janitor.MaybeRun(ctx); err != nil && ctx.Err() == nil {
			fails.failed(err)
		} else if ran && err == nil {
			fails.ok()
		}
	}
}

// lead runs the leader-only services while this instance leads.
func (e *Engine) lead(ctx context.Context) {
	var wg sync.WaitGroup
	e.start(ctx, &wg, e.leading)
	wg.Wait()
}
