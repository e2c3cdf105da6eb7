// Package dispatch claims tasks this instance can run and runs them: one
// batched claim per wake-up for as many tasks as there are free slots, a
// goroutine per task on the runner the capability map names, one batched
// heartbeat per interval, and batched completion. It is the seed's Dispatcher,
// BatchedHeartbeat and complete/fail path.
//
// Files: dispatch.go holds the dispatcher and a run's start and end;
// claim.go the claim loop; heartbeat.go the batched lease extension;
// shutdown.go the graceful stop; complete.go the batched completion;
// workers.go the reused worker goroutines and the run deadlines. Leases,
// deadlines, the heartbeat's interval, the grace period and the pauses
// between completion retries are reckoned on the engine's clock
// (Config.Clock); only the waits that batch work for throughput
// (FlushInterval, ClaimCoalesce, an idle goroutine's life) are wall time.
package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/tracing"
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
	// InstanceRuns counts the runs of this instance against each pair's
	// concurrency.per_instance. Give the one the instance's other runs
	// (its API's SYNCHRONOUS runs) take room from too, so that the cap
	// holds for them all; nil: one of the dispatcher's own.
	InstanceRuns *execution.InstanceRuns
	// Slots is how many tasks run at once in this instance. Default 100.
	Slots int
	// ClaimAhead is at most how many claimed tasks may wait in this
	// instance for a slot (see ahead.go): claims then need not wait for
	// slots to free, and a slot that frees starts a waiting task at once,
	// without a round trip. How many wait is what runs end during one
	// claim's round trip, so short tasks are claimed ahead and long ones
	// not. Default 8 × Slots; -1 turns it off.
	ClaimAhead int
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
	// Fair, when set, shares each claim batch among the tenants with due
	// tasks by weight (store.ClaimParams.Fair), but for the claims after
	// one that found a single tenant (census.go); nil claims by priority
	// and age only.
	Fair *store.Fairness
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
	// TracerProvider traces the tasks that carry a trace context (see
	// internal/tracing): spans wf.claim, wf.run and wf.finish in the trace
	// they were enqueued in. Nil means tracing is off.
	TracerProvider trace.TracerProvider
}

// Dispatcher claims and runs tasks. Create it with New and call Run once.
type Dispatcher struct {
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer
	waker  *signalbus.Waker
	// serving is what the dispatcher claims and how (serving.go), swapped
	// whole when the specs are reloaded (SetCapabilities).
	serving atomic.Pointer[serving]
	done    chan result

	mu      sync.Mutex
	running map[uuid.UUID]*run
	// lost are runs whose task this instance claimed again while they
	// still ran (their lease was gone): they keep their slot until they
	// return, and their results are dropped.
	lost    map[*run]struct{}
	backlog bool // the last claim filled every free slot: more may wait
	wg      sync.WaitGroup
	queuing sync.WaitGroup // runs handing their outcome to the completer
	// stopping is set once no more outcomes come: failed completion writes
	// then give up sooner.
	stopping atomic.Bool
	idle     chan struct{} // closed while nothing runs (settleIdle), replaced when a run starts
	idleOpen bool          // idle is not closed yet

	// reserved is the slots that claims in flight asked for (freeSlots);
	// their tasks are not running yet.
	reserved int
	// instance counts the runs of the pairs with a per-instance cap, with
	// the instance's SYNCHRONOUS runs (Config.InstanceRuns): each claim
	// reserves room for the tasks it asks for (freeSlots), a started task
	// keeps its room until its run ends (freeSlot, forget), and the rest
	// is given back once the claim's tasks started (unreserve).
	instance *execution.InstanceRuns
	// wake is waker.Wake, which instance calls when a run of a pair that
	// a claim found full ends.
	wake func()

	// queue holds the claimed runs waiting for a slot, oldest first
	// (ahead.go); they are in running too. draining is set once shutdown
	// began: a freed slot then starts no queued run.
	queue    []*run
	draining bool
	pace     pace   // run and claim durations, for ClaimAhead
	census   census // when a claim may skip fairness (census.go)

	jobs          chan func()      // hands a task to an idle worker goroutine
	deadlineWaker *signalbus.Waker // a run's deadline comes before nextDeadline
	nextDeadline  time.Time        // what watchDeadlines waits for (zero: nothing)
}

// releaseInstance gives back the per-instance room a run of a capped pair
// held. d.mu must be held.
func (d *Dispatcher) releaseInstance(r *run) {
	if r.rule.PerInstance > 0 {
		d.instance.Release(pairOf(r), 1)
	}
}

type run struct {
	task      wftype.Task
	rule      execution.Rule
	runner    runners.Runner  // the runner of the claim's capability map
	ctx       context.Context // the run's context, cancelled by cancel
	cancel    context.CancelCauseFunc
	queued    bool      // claimed, waiting for a slot (ahead.go)
	launched  time.Time // wall time the run started, for pace
	started   time.Time
	deadline  time.Time // started + the run timeout (see watchDeadlines)
	leaseLost bool      // result must be discarded
	overdue   bool      // a heartbeat saw it past its deadline (see beat)
	// leaseUntil is when the lease ends by this instance's reckoning: the
	// claim's or the last heartbeat's start plus the lease.
	leaseUntil time.Time
	shutdown   bool // cancelled by shutdown: hand back, count nothing
	ended      bool // the runner returned: the outcome is being queued
	// span is the context of the run's span when the task is traced.
	span trace.SpanContext
}

type result struct {
	task    wftype.Task
	rule    execution.Rule
	outputs json.RawMessage
	err     error
	ran     time.Duration
	// span is the run's span context when the task is traced: the
	// completer's "wf.finish" span joins it, from queued (wall time) to the
	// write.
	span   trace.SpanContext
	queued time.Time
}

var (
	errLeaseLost = errors.New("lease lost: the task was cancelled, rescued or taken over")
	errShutdown  = errors.New("instance shutting down")
)

// New validates cfg, fills defaults and returns a Dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil || cfg.Bus == nil || cfg.Owner == "" {
		return nil, errors.New("error creating dispatcher: store, bus and owner are required")
	}
	cfg.Slots = cmp.Or(cfg.Slots, 100)
	cfg.ClaimAhead = cmp.Or(cfg.ClaimAhead, 8*cfg.Slots)
	cfg.HeartbeatInterval = cmp.Or(cfg.HeartbeatInterval, 30*time.Second)
	cfg.FlushInterval = cmp.Or(cfg.FlushInterval, 5*time.Millisecond)
	cfg.FlushSize = cmp.Or(cfg.FlushSize, 1000)
	cfg.FlushWorkers = cmp.Or(cfg.FlushWorkers, 2)
	cfg.ClaimWorkers = cmp.Or(cfg.ClaimWorkers, 2)
	cfg.ClaimCoalesce = cmp.Or(cfg.ClaimCoalesce, 20*time.Millisecond)
	cfg.Grace = cmp.Or(cfg.Grace, 20*time.Second)
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	d := &Dispatcher{
		cfg:     cfg,
		log:     cfg.Logger.With("owner", cfg.Owner),
		tracer:  tracing.Tracer(cfg.TracerProvider),
		waker:   signalbus.NewWaker(),
		done:    make(chan result, cfg.FlushSize*2),
		running: map[uuid.UUID]*run{},
		lost:    map[*run]struct{}{},
		idle:    make(chan struct{}),

		instance: cfg.InstanceRuns,

		jobs:          make(chan func()),
		deadlineWaker: signalbus.NewWaker(),
	}
	close(d.idle)
	if d.instance == nil {
		d.instance = execution.NewInstanceRuns()
	}
	d.wake = d.waker.Wake
	d.serving.Store(newServing(cfg.Capabilities, cfg.Rules))
	return d, nil
}

// TaskTypes lists the task types this dispatcher can claim now.
func (d *Dispatcher) TaskTypes() []string { return append([]string(nil), d.serving.Load().types...) }

// Running returns how many tasks run now (not those claimed ahead).
func (d *Dispatcher) Running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.busy() - len(d.queue)
}

// Slots is how many tasks this dispatcher runs at most at once.
func (d *Dispatcher) Slots() int { return d.cfg.Slots }

// settleIdle closes idle when nothing is busy and it is still open. The
// flag, not the count, says whether idle is closed: every path that empties
// the dispatcher (a run freeing its slot, queued runs forgotten) calls it,
// and two of them may see busy() at 0 before a start opens idle again
// (closing it twice panicked the process once in a continuous bench run).
// d.mu must be held.
func (d *Dispatcher) settleIdle() {
	if d.idleOpen && d.busy() == 0 {
		close(d.idle)
		d.idleOpen = false
	}
}

// busy is how many runs hold a slot or wait for one (claimed ahead); d.mu
// must be held.
func (d *Dispatcher) busy() int { return len(d.running) + len(d.lost) }

// Run claims and runs tasks until ctx ends, then shuts down: no more claims,
// running tasks get the grace period, the rest go back to PENDING at once,
// and every finished result is written before Run returns.
func (d *Dispatcher) Run(ctx context.Context) error {
	unsubWake := d.cfg.Bus.Subscribe(signalbus.TaskQueued, func(payload string) {
		d.census.taskQueued(payload)
		d.waker.Wake()
	})
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

// start runs one claimed task on a worker goroutine of its own, or queues
// it for the next free slot when every slot is taken (claimed ahead). sv
// is what the claim was made for: the task keeps its rule and runner
// whatever SetCapabilities swaps in meanwhile.
func (d *Dispatcher) start(runsCtx context.Context, sv *serving, task wftype.Task, claimedAt time.Time) {
	pair := runners.Pair{Mode: task.ExecutionMode, TaskType: task.TaskType}
	runCtx, cancel := context.WithCancelCause(runsCtx)
	rule := sv.rules[pair]
	r := &run{task: task, rule: rule, runner: sv.caps[pair], ctx: runCtx, cancel: cancel, leaseUntil: claimedAt.Add(rule.Lease)}
	d.mu.Lock()
	// A run of an earlier claim of this task that has not returned lost its
	// lease (the task went back to PENDING), though the row names this
	// instance again, so no heartbeat would tell it: cancel it now. One
	// that still waits for a slot just leaves the queue.
	old := d.running[task.ID]
	if old != nil {
		old.leaseLost = true
		if old.queued {
			d.unqueue(old)
			old = nil
		} else {
			d.lost[old] = struct{}{}
		}
	}
	// Its per-instance room, if its pair has a cap, is its claim's (see
	// unreserve).
	d.running[task.ID] = r
	if !d.idleOpen { // (after unqueue, which may have settled it)
		d.idle, d.idleOpen = make(chan struct{}), true
	}
	// Whether this call launches the run is decided here, under d.mu: once
	// it is unlocked, a slot freed elsewhere may take a queued run off the
	// queue and launch it (nextQueued), and reading r.queued after that
	// would launch it a second time.
	var earlier bool
	queued := len(d.queue) > 0 || d.busy()-len(d.queue) > d.cfg.Slots
	if queued {
		r.queued = true
		d.queue = append(d.queue, r)
	} else {
		earlier = d.arm(r)
	}
	d.mu.Unlock()
	if old != nil {
		d.log.Warn("task claimed again while a run of its earlier claim still runs; cancelling that run",
			"task_id", task.ID, "task_type", task.TaskType)
		old.cancel(errLeaseLost)
	}
	if !queued {
		d.launch(r, earlier)
	}
}

// arm gives a run that takes a slot its start and deadline (from now), in
// the same critical section that makes it a running (not queued) run: the
// deadline watcher and the heartbeat read every run that is not queued, and
// one without its deadline yet would look overdue and be cancelled with
// ErrTimeout before it started. It reports whether the deadline comes
// before the one the watcher waits for. d.mu must be held.
func (d *Dispatcher) arm(r *run) (earlier bool) {
	now := d.cfg.Clock.Now()
	r.started, r.deadline, r.launched = now, now.Add(r.rule.Timeout), time.Now()
	earlier = d.nextDeadline.IsZero() || r.deadline.Before(d.nextDeadline)
	if earlier {
		d.nextDeadline = r.deadline
	}
	return earlier
}

// launch starts a run armed with its deadline (arm) on a worker goroutine,
// first waking the deadline watcher when the run's deadline is the earliest.
func (d *Dispatcher) launch(r *run, earlier bool) {
	// r.task, not a copy of it: a copy the closure below used would be a
	// heap object per run.
	runner := r.runner
	if earlier {
		d.deadlineWaker.Wake()
	}
	runCtx, cancel := r.ctx, r.cancel
	d.wg.Add(1)
	d.spawn(func() {
		defer d.wg.Done()
		if runners.RunsRemotely(runner) {
			// Only a claim handed to a remote runner is a remote worker's
			// to finish over HTTP: recorded before the hand-over.
			if err := d.cfg.Store.MarkRemoteRun(runCtx, r.task.ID, store.WorkerLease{Owner: d.cfg.Owner, Attempt: r.task.Attempts}); err != nil {
				cancel(nil)
				d.finish(r, nil, fmt.Errorf("error handing the task to a remote runner: %w", err))
				return
			}
		}
		ctx, span := d.traceRun(runCtx, &r.task)
		outputs, err := execution.Execute(ctx, execution.Run{
			Task: &r.task, Runner: runner, Reporters: d.cfg.Reporters, Logger: d.log,
		})
		if span != nil {
			tracing.End(span, err)
			r.span = span.SpanContext()
		}
		cancel(nil)
		d.finish(r, outputs, err)
	})
}

// traceRun continues the trace a task was enqueued in: a "wf.claim" span
// marks the claim, and the run gets a "wf.run" span, whose context ctx then
// carries to the runner (the exec runner's TRACEPARENT, the http runner's
// traceparent header). An untraced task (tracing off when it was enqueued)
// gets no span: span is nil and ctx unchanged.
func (d *Dispatcher) traceRun(ctx context.Context, t *wftype.Task) (context.Context, trace.Span) {
	if t.Traceparent == "" {
		return ctx, nil
	}
	ctx = tracing.WithTraceparent(ctx, t.Traceparent)
	attrs := trace.WithAttributes(attribute.String("wf.task_id", t.ID.String()), attribute.String("wf.task_type", t.TaskType),
		attribute.String("wf.schema_name", t.SchemaName), attribute.Int("wf.attempt", t.Attempts), attribute.String("wf.owner", d.cfg.Owner))
	_, claim := d.tracer.Start(ctx, "wf.claim "+t.TaskType, attrs)
	claim.End()
	return d.tracer.Start(ctx, "wf.run "+t.TaskType, trace.WithSpanKind(trace.SpanKindConsumer), attrs)
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
	res := result{task: r.task, rule: r.rule, outputs: outputs, err: err, ran: d.cfg.Clock.Now().Sub(r.started), span: r.span}
	if r.span.IsValid() {
		res.queued = time.Now() // wall time: a span's
	}
	d.done <- res
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
	d.releaseInstance(r)
	d.pace.ran(time.Since(r.launched))
	next, earlier := d.nextQueued()
	backlog := d.backlog
	d.settleIdle()
	d.mu.Unlock()
	if next != nil {
		d.launch(next, earlier)
	}
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
		d.lose(r)
	}
	d.mu.Unlock()
	if ok {
		r.cancel(errLeaseLost)
	}
}

// lose marks a run's lease lost. One claimed ahead that still waits for a
// slot leaves the queue at once (forget), rather than hold its place and
// its pair's count until a slot frees, and the claim loop is woken for the
// place it frees. d.mu must be held.
func (d *Dispatcher) lose(r *run) {
	r.leaseLost = true
	if r.queued {
		d.unqueue(r)
		d.waker.Wake()
	}
}
