// Package engine runs wf: it composes leader election, the dispatcher, the
// janitor and the leader-only services into the `wf run` daemon. Any number
// of engines share one PostgreSQL; each claims only what its runners can run.
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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/leader"
	"github.com/wfhq/wf/engine/maintenance/janitor"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// Config configures an Engine. Zero fields take the defaults noted.
type Config struct {
	// Name is the service name (NAME): instances with one name elect one leader.
	Name string
	// Owner identifies this instance on claimed rows. Default host-pid-random.
	Owner string
	Pool  *pgxpool.Pool
	// Channels are the NOTIFY channel names. Default the seed's.
	Channels store.Channels
	// Runners in any order; the capability map orders them by priority.
	Runners []runners.Runner
	// Pairs are every (execution mode, task type) the specs declare.
	Pairs []runners.Pair
	// Rules per pair, from the specs.
	Rules execution.Rules
	// Slots is how many tasks run at once. Default 100.
	Slots int
	// PollInterval: follower polls and leader sweeps. Default 1s.
	PollInterval time.Duration
	// HeartbeatInterval. Default 30s.
	HeartbeatInterval time.Duration
	// JanitorInterval throttles the janitor. Default 30s.
	JanitorInterval time.Duration
	// Grace is how long running tasks may finish on shutdown. Default 20s.
	Grace time.Duration
	// PartitionsAhead is how many months of partitions are created at start
	// (the maintenance supervisor keeps them ahead afterwards). Default 3.
	PartitionsAhead int
	// Reporters builds the reporters of a task run (nil: records are dropped).
	Reporters func(task *wftype.Task) (reporters.Reporter, error)
	// LeaderServices run while this instance leads (maintenance, schedules);
	// each must return when its context ends.
	LeaderServices []func(ctx context.Context)
	// Services run on every instance for the engine's lifetime (the event
	// consumer); each must return when its context ends.
	Services []func(ctx context.Context, bus *signalbus.Bus)
	// Observer receives claim and outcome events (metrics).
	Observer execution.Observer
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Engine is one wf instance.
type Engine struct {
	cfg        Config
	bus        *signalbus.Bus
	store      *store.Store
	capability runners.CapabilityMap
	dispatcher *dispatch.Dispatcher
	elector    *leader.Elector
	janitor    *janitor.Janitor
}

// NewOwnerID returns an id naming this process: host, pid and a random suffix.
func NewOwnerID() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", cmp.Or(host, "wf"), os.Getpid(), hex.EncodeToString(b))
}

// New validates cfg and builds an engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Pool == nil {
		return nil, errors.New("error creating engine: no database pool")
	}
	cfg.Name = cmp.Or(cfg.Name, "wf")
	cfg.Owner = cmp.Or(cfg.Owner, NewOwnerID())
	if cfg.Channels.TaskQueued == "" {
		cfg.Channels = store.DefaultChannels
	}
	cfg.PollInterval = cmp.Or(cfg.PollInterval, time.Second)
	cfg.PartitionsAhead = cmp.Or(cfg.PartitionsAhead, 3)
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	heartbeat := cmp.Or(cfg.HeartbeatInterval, 30*time.Second)
	for pair, r := range cfg.Rules {
		// One late or failed heartbeat must not cost a lease (a run whose
		// lease ran out by its own reckoning is cancelled).
		if r.Lease > 0 && r.Lease < 2*heartbeat {
			return nil, fmt.Errorf("error creating engine: task type %s has a visibility timeout of %s, less than twice the heartbeat interval %s: one late heartbeat would lose its lease; raise visibility_timeout or lower heartbeat_interval",
				pair.TaskType, r.Lease, heartbeat)
		}
	}
	e := &Engine{cfg: cfg, bus: signalbus.New(), store: store.New(cfg.Pool).WithChannels(cfg.Channels)}
	e.capability = runners.BuildCapabilityMap(cfg.Runners, cfg.Pairs)
	var err error
	e.dispatcher, err = dispatch.New(dispatch.Config{
		Store: e.store, Owner: cfg.Owner, Capabilities: e.capability, Rules: cfg.Rules,
		Slots: cfg.Slots, HeartbeatInterval: cfg.HeartbeatInterval, Grace: cfg.Grace,
		Bus: e.bus, Reporters: cfg.Reporters, Clock: cfg.Clock, Logger: cfg.Logger, Observer: cfg.Observer,
	})
	if err != nil {
		return nil, err
	}
	e.janitor = janitor.New(janitor.Config{
		Store: e.store, Interval: cfg.JanitorInterval, Clock: cfg.Clock, Logger: cfg.Logger,
		Backoff: cfg.Rules.Backoff,
	})
	e.elector, err = leader.New(leader.Config{
		Name: cfg.Name, ConnConfig: cfg.Pool.Config().ConnConfig, Owner: cfg.Owner, Channels: cfg.Channels,
		PollInterval: cfg.PollInterval, Bus: e.bus, TaskTypes: e.dispatcher.TaskTypes,
		OnElected: e.lead, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Capabilities returns which runner serves each pair.
func (e *Engine) Capabilities() runners.CapabilityMap { return e.capability }

// Bus is the engine's signal bus.
func (e *Engine) Bus() *signalbus.Bus { return e.bus }

// IsLeader reports whether this instance leads its service.
func (e *Engine) IsLeader() bool { return e.elector.IsLeader() }

// LeaderChanged is closed at the next change of leadership.
func (e *Engine) LeaderChanged() <-chan struct{} { return e.elector.Changed() }

// Owner is this instance's id.
func (e *Engine) Owner() string { return e.cfg.Owner }

// Run runs the engine until ctx ends, then shuts down gracefully (see
// dispatch.Dispatcher.Run) and returns.
func (e *Engine) Run(ctx context.Context) error {
	if _, err := e.store.EnsurePartitions(ctx, e.cfg.Clock.Now(), e.cfg.PartitionsAhead); err != nil {
		return fmt.Errorf("error preparing partitions: %w", err)
	}
	e.cfg.Logger.Info("wf engine starting", "service", e.cfg.Name, "owner", e.cfg.Owner,
		"task_types", len(e.dispatcher.TaskTypes()), "slots", cmp.Or(e.cfg.Slots, 100))

	var wg sync.WaitGroup
	bg, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBg()
	wg.Add(1)
	go func() { defer wg.Done(); e.elector.Run(bg) }()
	wg.Add(1)
	go func() { defer wg.Done(); e.runJanitor(bg) }()
	for _, svc := range e.cfg.Services {
		wg.Add(1)
		go func() { defer wg.Done(); svc(bg, e.bus) }()
	}
	err := e.dispatcher.Run(ctx)
	stopBg()
	wg.Wait()
	e.cfg.Logger.Info("wf engine stopped", "owner", e.cfg.Owner)
	return err
}

// runJanitor runs the throttled janitor on dispatcher wake-ups.
func (e *Engine) runJanitor(ctx context.Context) {
	w := signalbus.NewWaker()
	unsub := e.bus.Subscribe(signalbus.TaskQueued, func(string) { w.Wake() })
	defer unsub()
	w.Wake()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.C():
		}
		if _, _, err := e.janitor.MaybeRun(ctx); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Warn("janitor run failed", "err", err)
		}
	}
}

// lead runs the leader-only services while this instance leads. (Partitions
// ahead are the maintenance supervisor's job, one of those services in wf run.)
func (e *Engine) lead(ctx context.Context) {
	var wg sync.WaitGroup
	for _, svc := range e.cfg.LeaderServices {
		wg.Add(1)
		go func() { defer wg.Done(); svc(ctx) }()
	}
	wg.Wait()
}
