// Package dispatch claims tasks this instance can run and runs them: one
// batched claim per wake-up for as many tasks as there are free slots, a
// goroutine per task on the runner the capability map names, one batched
// heartbeat per interval, and batched completion. It is the seed's Dispatcher,
// BatchedHeartbeat and complete/fail path.
package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// Config configures a Dispatcher.
type Config struct {
	Store *store.Store
	// Owner is this instance's id, written to claimed rows.
	Owner string
	// Capabilities says which runner runs each pair; only these are claimed.
	Capabilities runners.CapabilityMap
	// Rules per pair; a pair without one gets the defaults.
	Rules execution.Rules
	// Slots is how many tasks run at once in this instance. Default 100.
	Slots int
	// HeartbeatInterval is how often leases are extended. Default 30s.
	HeartbeatInterval time.Duration
	// FlushInterval and FlushSize batch completions. Defaults 5ms and 1000.
	FlushInterval time.Duration
	FlushSize     int
	// FlushWorkers is how many batches are written at once. Default 2.
	FlushWorkers int
	// ClaimWorkers is how many claims may run at once while a backlog
	// waits. Default 2.
	ClaimWorkers int
	// ClaimCoalesce is how long, while a backlog waits, the dispatcher lets
	// freed slots gather into one claim of at least a quarter of Slots (at
	// most 100) rather than claim a task at a time. Default 20ms.
	ClaimCoalesce time.Duration
	// Grace is how long running tasks may finish after Run's context ends;
	// the rest are handed back to PENDING. Default 20s.
	Grace time.Duration
	// Bus wakes the dispatcher (signalbus.TaskQueued) and carries cancellations.
	Bus *signalbus.Bus
	// Reporters builds the reporter of a task run; nil discards records.
	Reporters func(task *wftype.Task) (reporters.Reporter, error)
	// Clock is the time source. Default the wall clock.
	Clock  clock.Clock
	Logger *slog.Logger
	// Observer, when set, is told about claims and outcomes (metrics).
	Observer execution.Observer
}

// Dispatcher claims and runs tasks. Create it with New and call Run once.
type Dispatcher struct {
	cfg   Config
	log   *slog.Logger
	waker *signalbus.Waker
	rules execution.Rules
	types []string
	done  chan result

	mu      sync.Mutex
	running map[uuid.UUID]*run
	// lost are runs whose task this instance claimed again while they
	// still ran (their lease was gone): they keep their slot until they
	// return, and their results are dropped.
	lost    map[*run]struct{}
	perType map[runners.Pair]int
	backlog bool // the last claim filled every free slot: more may wait
	wg      sync.WaitGroup
	queuing sync.WaitGroup // runs handing their outcome to the completer
	// stopping is set once no more outcomes come: failed completion writes
	// then give up sooner.
	stopping atomic.Bool
	idle     chan struct{} // closed and replaced whenever nothing runs

	// reserved and reservedPer are the slots that claims in flight asked
	// for (freeSlots); their tasks are not running yet.
	reserved    int
	reservedPer map[runners.Pair]int

	jobs          chan func()      // hands a task to an idle worker goroutine
	deadlineWaker *signalbus.Waker // a run's deadline comes before nextDeadline
	nextDeadline  time.Time        // what watchDeadlines waits for (zero: nothing)
}

type run struct {
	task      wftype.Task
	rule      execution.Rule
	cancel    context.CancelCauseFunc
	started   time.Time
	deadline  time.Time // started + the run timeout (see watchDeadlines)
	leaseLost bool      // result must be discarded
	overdue   bool      // a heartbeat saw it past its deadline (see beat)
	// leaseUntil is when the lease ends by this instance's reckoning: the
	// claim's or the last heartbeat's start plus the lease.
	leaseUntil time.Time
	shutdown   bool // cancelled by shutdown: hand back, count nothing
	ended      bool // the runner returned: the outcome is being queued
}

type result struct {
	task    wftype.Task
	rule    execution.Rule
	outputs json.RawMessage
	err     error
	ran     time.Duration
}

var (
	errLeaseLost = errors.New("lease lost: the task was cancelled, rescued or taken over")
	errShutdown  = errors.New("instance shutting down")
)

// abandonAfter bounds how long shutdown waits, past the grace period, for
// cancelled runs to return (at most Grace): a handler that ignores its
// context must not keep the instance from stopping.
const abandonAfter = 5 * time.Second

// New validates cfg, fills defaults and returns a Dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil || cfg.Bus == nil || cfg.Owner == "" {
		return nil, errors.New("error creating dispatcher: store, bus and owner are required")
	}
	cfg.Slots = cmp.Or(cfg.Slots, 100)
	cfg.HeartbeatInterval = cmp.Or(cfg.HeartbeatInterval, 30*time.Second)
	cfg.FlushInterval = cmp.Or(cfg.FlushInterval, 5*time.Millisecond)
	cfg.FlushSize = cmp.Or(cfg.FlushSize, 1000)
	cfg.FlushWorkers = cmp.Or(cfg.FlushWorkers, 2)
	cfg.ClaimWorkers = cmp.Or(cfg.ClaimWorkers, 2)
	cfg.ClaimCoalesce = cmp.Or(cfg.ClaimCoalesce, 20*time.Millisecond)
	cfg.Grace = cmp.Or(cfg.Grace, 20*time.Second)
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Dispatcher{
		cfg:     cfg,
		log:     cfg.Logger.With("owner", cfg.Owner),
		waker:   signalbus.NewWaker(),
		rules:   execution.Rules{},
		done:    make(chan result, cfg.FlushSize*2),
		running: map[uuid.UUID]*run{},
		lost:    map[*run]struct{}{},
		perType: map[runners.Pair]int{},
		idle:    make(chan struct{}),

		reservedPer: map[runners.Pair]int{},

		jobs:          make(chan func()),
		deadlineWaker: signalbus.NewWaker(),
	}
	close(d.idle)
	seen := map[string]bool{}
	for pair := range cfg.Capabilities {
		r, ok := cfg.Rules[pair]
		if !ok {
			r = execution.Rule{Pair: pair}
		}
		r.Pair = pair
		d.rules[pair] = r.WithDefaults()
		if !seen[pair.TaskType] {
			seen[pair.TaskType] = true
			d.types = append(d.types, pair.TaskType)
		}
	}
	sort.Strings(d.types)
	return d, nil
}

// TaskTypes lists the task types this dispatcher can claim.
func (d *Dispatcher) TaskTypes() []string { return append([]string(nil), d.types...) }

// Running returns how many tasks run now.
func (d *Dispatcher) Running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.busy()
}

// Slots is how many tasks this dispatcher runs at most at once.
func (d *Dispatcher) Slots() int { return d.cfg.Slots }

// busy is how many runs hold a slot; d.mu must be held.
func (d *Dispatcher) busy() int { return len(d.running) + len(d.lost) }

// Run claims and runs tasks until ctx ends, then shuts down: no more claims,
// running tasks get the grace period, the rest go back to PENDING at once,
// and every finished result is written before Run returns.
func (d *Dispatcher) Run(ctx context.Context) error {
	unsubWake := d.cfg.Bus.Subscribe(signalbus.TaskQueued, func(string) { d.waker.Wake() })
	defer unsubWake()
	unsubStatus := d.cfg.Bus.Subscribe(signalbus.TaskStatusChanged, d.onStatusChanged)
	defer unsubStatus()

	// Runs and the completer outlive ctx: they stop after the grace period.
	runsCtx, cancelRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelRuns(errShutdown)
	completerDone := make(chan struct{})
	go func() { defer close(completerDone); d.complete() }()
	hbCtx, stopHeartbeat := context.WithCancel(runsCtx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); d.heartbeat(hbCtx) }()
	dlDone := make(chan struct{})
	go func() { defer close(dlDone); d.watchDeadlines(hbCtx) }()

	d.waker.Wake()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-d.waker.C():
			d.claimUntilIdle(ctx, runsCtx)
		}
	}
	d.shutdown(cancelRuns)
	stopHeartbeat()
	<-hbDone
	<-dlDone
	d.stopping.Store(true)
	close(d.done)
	<-completerDone
	return nil
}

// claimOnce claims up to limit of the free slots in one round trip and
// starts the tasks. It reports whether the claim filled every slot it asked
// for. Claims may run at once (see claimUntilIdle): the slots a claim asks
// for are reserved until its tasks run.
func (d *Dispatcher) claimOnce(ctx, runsCtx context.Context, limit int) (bool, error) {
	slots, total := d.freeSlots(limit)
	defer d.unreserve(slots, total)
	if total == 0 {
		d.mu.Lock()
		d.backlog = true
		d.mu.Unlock()
		return false, nil
	}
	start := time.Now()
	claimed, err := d.cfg.Store.Claim(ctx, store.ClaimParams{
		Owner: d.cfg.Owner, Slots: slots, Total: total, Global: d.globalLimits(slots), Now: d.cfg.Clock.DBNow(),
	})
	if err != nil {
		return false, err
	}
	tasks := claimed.Tasks
	if d.cfg.Observer != nil && len(tasks) > 0 {
		d.cfg.Observer.Claimed(tasks, time.Since(start))
	}
	// A pair that got all it asked for may have more waiting: finishing
	// runs then wake the dispatcher instead of waiting for a signal.
	// So may a type whose global cap the claim filled: the room its runs
	// free is for more of it.
	got := map[runners.Pair]int{}
	gotType := map[string]int{}
	for _, t := range tasks {
		got[runners.Pair{Mode: t.ExecutionMode, TaskType: t.TaskType}]++
		gotType[t.TaskType]++
	}
	full := len(tasks) > 0 && len(tasks) == total
	backlog := full
	for _, s := range slots {
		if s.Max > 0 && got[runners.Pair{Mode: s.Mode, TaskType: s.TaskType}] >= s.Max {
			backlog = true
		}
	}
	for tt, room := range claimed.Room {
		if gotType[tt] >= room {
			backlog = true
		}
	}
	d.mu.Lock()
	d.backlog = backlog
	d.mu.Unlock()
	for i := range tasks {
		d.start(runsCtx, tasks[i], start)
	}
	return full, nil
}

// freeSlots computes, per pair, how many more tasks this instance may run,
// at most limit in all, and reserves them for the caller's claim (give them
// back with unreserve once the claimed tasks run).
func (d *Dispatcher) freeSlots(limit int) ([]store.ClaimSlot, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	total := min(d.cfg.Slots-d.busy()-d.reserved, limit)
	if total <= 0 {
		return nil, 0
	}
	slots := make([]store.ClaimSlot, 0, len(d.rules))
	for pair, r := range d.rules {
		max := total
		if r.PerInstance > 0 {
			max = min(max, r.PerInstance-d.perType[pair]-d.reservedPer[pair])
		}
		if max <= 0 {
			continue
		}
		slots = append(slots, store.ClaimSlot{Mode: pair.Mode, TaskType: pair.TaskType, Max: max, Lease: r.Lease})
	}
	if len(slots) == 0 {
		return nil, 0
	}
	d.reserved += total
	for _, sl := range slots {
		if d.rules[runners.Pair{Mode: sl.Mode, TaskType: sl.TaskType}].PerInstance > 0 {
			d.reservedPer[runners.Pair{Mode: sl.Mode, TaskType: sl.TaskType}] += sl.Max
		}
	}
	return slots, total
}

// globalLimits returns the cluster-wide caps (concurrency.global) of the
// types among slots, or nil when none has one. The store counts and claims
// a capped type under the type's advisory lock, in one transaction, so that
// claims of several instances at the same instant take turns and never
// overshoot the cap (store.ClaimParams.Global).
func (d *Dispatcher) globalLimits(slots []store.ClaimSlot) map[string]int {
	var caps map[string]int
	for _, s := range slots {
		if r := d.rules[runners.Pair{Mode: s.Mode, TaskType: s.TaskType}]; r.Global > 0 {
			if caps == nil {
				caps = map[string]int{}
			}
			caps[s.TaskType] = max(caps[s.TaskType], r.Global)
		}
	}
	return caps
}

// start runs one claimed task on a worker goroutine of its own.
func (d *Dispatcher) start(runsCtx context.Context, task wftype.Task, claimedAt time.Time) {
	pair := runners.Pair{Mode: task.ExecutionMode, TaskType: task.TaskType}
	rule := d.rules[pair]
	runner := d.cfg.Capabilities[pair]
	runCtx, cancel := context.WithCancelCause(runsCtx)
	now := time.Now()
	r := &run{task: task, rule: rule, cancel: cancel, started: now, deadline: now.Add(rule.Timeout),
		leaseUntil: claimedAt.Add(rule.Lease)}
	d.mu.Lock()
	if d.busy() == 0 {
		d.idle = make(chan struct{})
	}
	// A run of an earlier claim of this task that has not returned lost its
	// lease (the task went back to PENDING), though the row names this
	// instance again, so no heartbeat would tell it: cancel it now.
	old := d.running[task.ID]
	if old != nil {
		old.leaseLost = true
		d.lost[old] = struct{}{}
	}
	d.running[task.ID] = r
	d.perType[pair]++
	earlier := d.nextDeadline.IsZero() || r.deadline.Before(d.nextDeadline)
	if earlier {
		d.nextDeadline = r.deadline
	}
	d.mu.Unlock()
	if old != nil {
		d.log.Warn("task claimed again while a run of its earlier claim still runs; cancelling that run",
			"task_id", task.ID, "task_type", task.TaskType)
		old.cancel(errLeaseLost)
	}
	if earlier {
		d.deadlineWaker.Wake()
	}
	d.wg.Add(1)
	d.spawn(func() {
		defer d.wg.Done()
		outputs, err := execution.Execute(runCtx, execution.Run{
			Task: &r.task, Runner: runner, Reporters: d.cfg.Reporters, Logger: d.log,
		})
		cancel(nil)
		d.finish(r, outputs, err)
	})
}

// finish queues the outcome for the batched write, then frees the slot.
func (d *Dispatcher) finish(r *run, outputs json.RawMessage, err error) {
	// The slot is freed only once the outcome is queued: while the
	// completion queue is full the slot stays taken, so claims cannot run
	// ahead of the writes (back-pressure).
	d.mu.Lock()
	r.ended = true // shutdown must not hand back a task whose outcome is queued
	leaseLost, shutdown := r.leaseLost, r.shutdown
	remote := errors.Is(err, wftype.ErrFinishedRemotely)
	if !leaseLost && !shutdown && !remote {
		d.queuing.Add(1) // shutdown waits for it before closing d.done
	}
	d.mu.Unlock()
	defer d.freeSlot(r)
	switch {
	case leaseLost:
		d.log.Info("result discarded: lease lost", execution.TaskAttrs(&r.task)...)
		return
	case shutdown:
		return // handed back by shutdown
	case remote:
		d.log.Debug("result written by the remote worker", "task_id", r.task.ID, "task_type", r.task.TaskType)
		return
	}
	defer d.queuing.Done()
	d.done <- result{task: r.task, rule: r.rule, outputs: outputs, err: err, ran: time.Since(r.started)}
}

// freeSlot forgets a run whose outcome is queued (or dropped) and wakes the
// claim loop when tasks may be waiting.
func (d *Dispatcher) freeSlot(r *run) {
	d.mu.Lock()
	if d.running[r.task.ID] == r {
		delete(d.running, r.task.ID)
	} else {
		delete(d.lost, r)
	}
	d.perType[runners.Pair{Mode: r.task.ExecutionMode, TaskType: r.task.TaskType}]--
	backlog := d.backlog
	if d.busy() == 0 {
		close(d.idle)
	}
	d.mu.Unlock()
	if backlog {
		d.waker.Wake()
	}
}

// onStatusChanged cancels a running task that was cancelled in the database.
func (d *Dispatcher) onStatusChanged(payload string) {
	const prefix = "CANCELLED:"
	if len(payload) <= len(prefix) || payload[:len(prefix)] != prefix {
		return
	}
	id, err := uuid.Parse(payload[len(prefix):])
	if err != nil {
		return
	}
	d.mu.Lock()
	r, ok := d.running[id]
	if ok {
		r.leaseLost = true
	}
	d.mu.Unlock()
	if ok {
		r.cancel(errLeaseLost)
	}
}

// shutdown waits up to Grace for running tasks, then cancels and hands back
// the rest, and waits a little more (abandonAfter) for them to return.
func (d *Dispatcher) shutdown(cancelRuns context.CancelCauseFunc) {
	d.mu.Lock()
	idle := d.idle
	n := d.busy()
	d.mu.Unlock()
	if n > 0 {
		d.log.Info("shutting down: waiting for running tasks", "running", n, "grace", d.cfg.Grace)
	}
	select {
	case <-idle:
	case <-time.After(d.cfg.Grace):
	}
	d.mu.Lock()
	var ids []uuid.UUID
	for id, r := range d.running {
		if r.ended {
			continue // its outcome is queued: the completer writes it
		}
		r.shutdown = true
		ids = append(ids, id)
	}
	d.mu.Unlock()
	if len(ids) > 0 {
		cancelRuns(errShutdown)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		released, err := d.cfg.Store.ReleaseTasks(ctx, d.cfg.Owner, ids)
		cancel()
		if err != nil {
			d.log.Error("could not hand tasks back; their leases will expire", "tasks", len(ids), "err", err)
		} else {
			d.log.Info("handed unfinished tasks back", "tasks", len(released))
		}
	}
	cancelRuns(errShutdown)
	runsDone := make(chan struct{})
	go func() { defer close(runsDone); d.wg.Wait() }()
	select {
	case <-runsDone:
	case <-time.After(min(d.cfg.Grace, abandonAfter)):
		// Their tasks were handed back (or their leases lost) and their
		// results are dropped: only the outcomes being queued must be
		// waited for, so that the completer writes them.
		d.mu.Lock()
		n := d.busy()
		d.mu.Unlock()
		d.log.Error("stopping while runs ignore their cancellation; their results will be dropped", "running", n)
		d.queuing.Wait()
	}
}

// heartbeat extends the leases of every running task once per interval, in
// one statement, and cancels the tasks whose lease is gone.
func (d *Dispatcher) heartbeat(ctx context.Context) {
	t := time.NewTicker(d.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := d.beat(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("heartbeat failed; retrying at the next interval", "err", err)
		}
	}
}

func (d *Dispatcher) beat(ctx context.Context) error {
	now := time.Now()
	d.mu.Lock()
	leases := make([]store.Lease, 0, len(d.running))
	runs := make([]*run, 0, len(d.running))
	for id, r := range d.running {
		if r.leaseLost {
			continue
		}
		// A run past its deadline was cancelled (watchDeadlines): its lease
		// is extended once more, so that it has a whole lease to return, and
		// then left to expire, so that a handler that ignores the
		// cancellation does not hold its task forever; the janitor retries
		// or dead-letters it.
		if !r.ended && !now.Before(r.deadline) {
			if r.overdue {
				continue
			}
			r.overdue = true
		}
		leases = append(leases, store.Lease{ID: id, Lease: r.rule.Lease})
		runs = append(runs, r)
	}
	d.mu.Unlock()
	if len(leases) == 0 {
		return nil
	}
	started := time.Now()
	held, err := d.cfg.Store.Heartbeat(ctx, d.cfg.Owner, leases, d.cfg.Clock.DBNow())
	if lo, ok := d.cfg.Observer.(execution.LeaseObserver); ok && err == nil {
		lo.Heartbeat(len(leases), time.Since(started))
	}
	if err != nil {
		// A run whose lease has run out by now may be rescued and run
		// elsewhere: stop it rather than run it twice at once.
		d.loseExpired(runs)
		return err
	}
	keep := make(map[uuid.UUID]bool, len(held))
	for _, id := range held {
		keep[id] = true
	}
	var lost []*run
	d.mu.Lock()
	for _, r := range runs {
		switch {
		case keep[r.task.ID]:
			r.leaseUntil = now.Add(r.rule.Lease)
		case r.ended:
			// The run returned while the heartbeat was out (or before):
			// its outcome is queued, and most likely already written, which
			// is why the task is no longer RUNNING. Nothing runs to cancel,
			// and the completer's write settles the outcome either way.
		case !r.leaseLost:
			r.leaseLost = true
			lost = append(lost, r)
		}
	}
	d.mu.Unlock()
	for _, r := range lost {
		d.log.Warn("lease lost; cancelling the run", execution.TaskAttrs(&r.task)...)
		if lo, ok := d.cfg.Observer.(execution.LeaseObserver); ok {
			lo.LeaseLost(&r.task)
		}
		r.cancel(errLeaseLost)
	}
	return nil
}

// loseExpired cancels, as lease lost, those of runs whose lease has ended by
// this instance's reckoning, when a heartbeat could not extend it.
func (d *Dispatcher) loseExpired(runs []*run) {
	now := time.Now()
	var lost []*run
	d.mu.Lock()
	for _, r := range runs {
		if !r.ended && !r.leaseLost && now.After(r.leaseUntil) {
			r.leaseLost = true
			lost = append(lost, r)
		}
	}
	d.mu.Unlock()
	for _, r := range lost {
		d.log.Warn("lease expired while heartbeats failed; cancelling the run", "task_id", r.task.ID, "task_type", r.task.TaskType)
		r.cancel(errLeaseLost)
	}
}

// Beat runs one heartbeat now (for tests and benchmarks).
func (d *Dispatcher) Beat(ctx context.Context) error { return d.beat(ctx) }
