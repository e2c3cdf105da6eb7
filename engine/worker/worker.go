// Package worker runs one task to its end in this process and writes its
// result straight to the database: the engine behind `wf exec`, the generic
// worker that a remote runner's container executes (the seed's main_task.py
// and its update_task_sync).
//
// A worker takes its task in one of three ways:
//
//   - Take with a lease: the task is ACTIVE, claimed by a dispatcher that
//     handed it to a remote runner (Cloud Run), and the worker was told the
//     claim's owner id and attempt (WF_OWNER_ID, WF_ATTEMPT). The worker acts
//     under that same claim: its heartbeats and its final write are checked
//     against (owner, attempt), so a worker of an earlier attempt can never
//     write over a later one, and the dispatcher, which keeps heartbeating
//     under the same owner, sees the task finished when the worker wrote it.
//   - Take without a lease: the task must be PENDING; the worker claims it
//     under its own owner id, like a dispatcher would, whatever its
//     run_after, but within its type's limits and, with
//     Config.CheckPauses, not while its type or tenant is paused.
//   - Create: the worker inserts the task and claims it in one transaction,
//     so no dispatcher ever sees it PENDING; the same limits and pauses
//     hold.
//
// A task the worker claims itself takes the room of its type's limits
// (concurrency.global and per_tenant, rate_limit) as the dispatcher's claim
// does (store.StartSync): past them it is refused with a *BusyError, and a
// start it lets through (or forces, Config.Force) counts in the type's rate
// windows, which the claims read.
//
// Run then runs the task with execution.Execute, keeps its lease while it
// runs, and writes the outcome with execution.FinishLeased, deciding it with
// execution.Outcome: retries, dead letters, permanent failures and the
// task.failed / task.dead_lettered events are exactly those of `wf run`.
//
// The HTTP API's SYNCHRONOUS runs are a Create and a Run of a worker in the
// API's process (Config.MaxTimeout and Config.FinishWhenStopped are
// theirs).
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// Config configures a Worker.
type Config struct {
	// Store is where the task lives and its result goes. Required.
	Store *store.Store
	// Owner is the owner id under which the worker claims PENDING tasks
	// itself. Required.
	Owner string
	// Capabilities says which runner runs each (execution mode, task type)
	// pair: the local runners only, never a remote one, or the worker would
	// hand its task on instead of running it.
	Capabilities runners.CapabilityMap
	// Rules per pair (lease, timeout, limits, backoff); a pair without one
	// gets the defaults.
	Rules execution.Rules
	// Reporters builds the reporter of the run; nil discards records.
	Reporters func(task *wftype.Task) (reporters.Reporter, error)
	// HeartbeatInterval is the longest time between two lease extensions; the
	// worker beats at least three times per lease. Default 30s.
	HeartbeatInterval time.Duration
	// MaxTimeout, when set, bounds every run below its task type's timeout
	// (the HTTP API: the answer must still be writable when the run ends).
	MaxTimeout time.Duration
	// Force makes Take and Create claim a task whatever its type's limits
	// (concurrency.global and per_tenant, rate_limit) and the pauses say
	// (wf exec --force). Without it, a task its type's limits leave no room
	// for is refused with a *BusyError, changing nothing. Either way a
	// start counts in the type's rate windows, so the claims that follow
	// see it.
	Force bool
	// CheckPauses makes Take and Create refuse, with a *PausedError and
	// changing nothing, a task whose task type or tenant is paused
	// (tasks.pauses), unless Force: wf exec. The HTTP API's synchronous
	// runs leave it off: a pause holds the queue, not a run in front of its
	// caller.
	CheckPauses bool
	// FinishWhenStopped writes the outcome of a run stopped by Run's context
	// like any failed run (the HTTP API: a SYNCHRONOUS task whose caller
	// left has failed in front of it), instead of handing the task back.
	FinishWhenStopped bool
	// Observer, when set, is told about claims and outcomes (metrics).
	Observer execution.Observer
	// TracerProvider traces runs (nil: tracing off): see Worker.Run.
	TracerProvider trace.TracerProvider
	// Clock is the time source. Default the wall clock.
	Clock  clock.Clock
	Logger *slog.Logger
}

// ErrBusy is wrapped by the error of Take, Create and CreateOrFind when a
// limit of the task's type has no room for it (see Config.Force).
var ErrBusy = errors.New("a limit of the task type has no room")

// BusyError is the error of Take, Create and CreateOrFind when a limit of
// the task's type has no room for it; it wraps ErrBusy.
type BusyError struct {
	TaskType string
	// Reason is the limit: store.HeldGlobal, HeldPerTenant or HeldRate.
	Reason string
	// Detail says it in words, e.g. "the limit of 3 running tasks of this type is reached
	// (concurrency.global)".
	Detail string
	// RetryAfter is, for HeldRate, the time left in the rate window that
	// has no room: the next window has. 0 for the concurrency limits, whose
	// room comes back when a run of the type ends.
	RetryAfter time.Duration
}

func (e *BusyError) Error() string { return fmt.Sprintf("task type %s: %s", e.TaskType, e.Detail) }

// Unwrap makes a BusyError an ErrBusy.
func (e *BusyError) Unwrap() error { return ErrBusy }

// ErrPaused is wrapped by the error of Take and Create when the task's
// type or tenant is paused (Config.CheckPauses).
var ErrPaused = errors.New("the task type or tenant is paused")

// PausedError is the error of Take and Create when the task's type or
// tenant is paused (Config.CheckPauses); it wraps ErrPaused.
type PausedError struct {
	// Pause is the pause that holds the task: its type's, else its
	// tenant's.
	Pause store.Pause
}

func (e *PausedError) Error() string {
	what := "task type"
	if e.Pause.Kind == store.PauseTenant {
		what = "tenant"
	}
	msg := fmt.Sprintf("%s %s is paused", what, e.Pause.Name)
	if e.Pause.Reason != nil {
		msg += fmt.Sprintf(" (%s)", *e.Pause.Reason)
	}
	return msg
}

// Unwrap makes a PausedError an ErrPaused.
func (e *PausedError) Unwrap() error { return ErrPaused }

// Worker runs single tasks. It is safe for concurrent use.
type Worker struct {
	cfg    Config
	tracer trace.Tracer
}

// New validates cfg, fills its defaults and returns a Worker.
func New(cfg Config) (*Worker, error) {
	if cfg.Store == nil || cfg.Owner == "" {
		return nil, errors.New("error creating worker: store and owner are required")
	}
	cfg.HeartbeatInterval = cmp.Or(cfg.HeartbeatInterval, 30*time.Second)
	if cfg.HeartbeatInterval < 0 {
		return nil, fmt.Errorf("error creating worker: heartbeat interval is %s, want more than zero", cfg.HeartbeatInterval)
	}
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Reporters == nil {
		cfg.Reporters = func(*wftype.Task) (reporters.Reporter, error) { return reporters.Discard{}, nil }
	}
	return &Worker{cfg: cfg, tracer: tracing.Tracer(cfg.TracerProvider)}, nil
}

// Claim is a task the worker holds, and the claim it holds it under.
type Claim struct {
	// Task is the task's row as claimed.
	Task wftype.Task
	// Lease is the claim: the owner id on the row and the attempt it counted.
	Lease store.WorkerLease
	// Own is true when the worker claimed the task itself (it was PENDING);
	// false when it took over a remote runner's claim.
	Own bool
}

// FinishedError is returned by Take for a task that has already ended:
// there is nothing to run. A remote container that is restarted after its
// worker wrote the result gets it.
type FinishedError struct {
	Task wftype.Task
}

// Error implements error.
func (e *FinishedError) Error() string {
	msg := fmt.Sprintf("task %s has already ended: it is %s", e.Task.ID, e.Task.Status)
	if e.Task.Error != nil {
		msg += " (" + *e.Task.Error + ")"
	}
	return msg
}

// Take takes task id to run it. With a lease (lease.Owner set), the task
// must be ACTIVE under it: the worker runs it under the remote runner's
// claim. Without one, the task must be PENDING, and the worker claims it
// under its own owner id with the lease of its task type, whatever its
// run_after: a *BusyError when its type's limits have no room, a
// *PausedError when its type or tenant is paused (Config.CheckPauses),
// both changing nothing (unless Config.Force). A task that has ended gives
// a *FinishedError; one in another state, wftype.ErrConflict saying why; a
// missing one, wftype.ErrNotFound.
func (w *Worker) Take(ctx context.Context, id uuid.UUID, lease store.WorkerLease) (Claim, error) {
	st := w.cfg.Store
	t, err := st.GetTask(ctx, id)
	if err != nil {
		return Claim{}, fmt.Errorf("error taking task %s: %w", id, err)
	}
	if t.Status.Terminal() {
		return Claim{}, &FinishedError{Task: t}
	}
	if lease.Owner != "" {
		// A read, not a lock: the lease is checked again, under a row lock,
		// when the result is written.
		if t.Status != wftype.StatusActive || t.OwnerID == nil || *t.OwnerID != lease.Owner ||
			(lease.Attempt != 0 && t.Attempts != lease.Attempt) {
			return Claim{}, fmt.Errorf("error taking task %s: %w", id, describeConflict(&t, lease))
		}
		return Claim{Task: t, Lease: store.WorkerLease{Owner: lease.Owner, Attempt: t.Attempts}}, nil
	}
	if t.Status != wftype.StatusPending {
		return Claim{}, fmt.Errorf("error taking task %s: it is %s, leased to %q; a worker takes over an ACTIVE task only with its lease (WF_OWNER_ID, WF_ATTEMPT): %w",
			id, t.Status, deref(t.OwnerID), wftype.ErrConflict)
	}
	var claim Claim
	err = st.InTx(ctx, func(tx *store.Store) error {
		var err error
		claim, err = w.claimOwn(ctx, tx, &t)
		return err
	})
	if err != nil {
		return Claim{}, fmt.Errorf("error taking task %s: %w", id, err)
	}
	return claim, nil
}

// claimOwn claims the PENDING task t for the worker in tx, after the
// checks of its pauses (Config.CheckPauses) and limits: a task they hold
// gives a *PausedError or *BusyError, and the caller rolls tx back.
func (w *Worker) claimOwn(ctx context.Context, tx *store.Store, t *wftype.Task) (Claim, error) {
	rule := w.cfg.Rules.For(t)
	if w.cfg.CheckPauses && !w.cfg.Force {
		p, err := tx.PauseOf(ctx, t.TaskType, t.SchemaName)
		if err != nil {
			return Claim{}, err
		}
		if p != nil {
			return Claim{}, &PausedError{Pause: *p}
		}
	}
	v, err := tx.StartSync(ctx, store.SyncStart{TaskType: t.TaskType, Tenant: t.SchemaName, Limits: rule.Limits(),
		Now: w.cfg.Clock.DBNow(), Force: w.cfg.Force})
	if err != nil {
		return Claim{}, err
	}
	if v.Held != "" {
		if !w.cfg.Force {
			return Claim{}, &BusyError{TaskType: t.TaskType, Reason: v.Held, Detail: limitText(rule, v.Held), RetryAfter: v.RetryIn}
		}
		w.cfg.Logger.WarnContext(ctx, "forced past a limit of the task type", "task_id", t.ID, "task_type", t.TaskType,
			"limit", limitText(rule, v.Held))
	}
	claimed, err := tx.ClaimSyncTask(ctx, t.ID, w.cfg.Owner, rule.Lease)
	if err != nil {
		return Claim{}, err
	}
	return Claim{Task: claimed, Lease: store.WorkerLease{Owner: w.cfg.Owner, Attempt: claimed.Attempts}, Own: true}, nil
}

// Create enqueues one task through cl (inputs checked against its task
// type, dedup key applied) and claims it in the same transaction, so no
// dispatcher ever sees it PENDING. When a live task already holds the dedup
// key, that task is taken instead, as Take without a lease would.
func (w *Worker) Create(ctx context.Context, cl *client.Client, req client.Request) (Claim, error) {
	claim, existing, err := w.CreateOrFind(ctx, cl, req)
	if err != nil || existing == nil {
		return claim, err
	}
	w.cfg.Logger.InfoContext(ctx, "a live task holds the dedup key; taking it", "task_id", existing.ID, "status", existing.Status)
	return w.Take(ctx, existing.ID, store.WorkerLease{})
}

// CreateOrFind is Create without the take: when a live task already holds
// the request's dedup key, it creates and claims nothing and returns that
// task (the HTTP API answers a duplicate synchronous request with it). A
// task its type's limits or a pause hold (see Take) is refused with a
// *BusyError or *PausedError, and nothing is created.
func (w *Worker) CreateOrFind(ctx context.Context, cl *client.Client, req client.Request) (Claim, *wftype.Task, error) {
	var claim Claim
	var existing *wftype.Task
	start := w.cfg.Clock.Now()
	err := w.cfg.Store.InTx(ctx, func(tx *store.Store) error {
		res, err := cl.EnqueueIn(ctx, tx, req)
		if err != nil {
			return err
		}
		if res.Duplicate {
			existing = &res.Task
			return nil
		}
		// A refusal rolls the insert back: nothing is created.
		claim, err = w.claimOwn(ctx, tx, &res.Task)
		return err
	})
	if err != nil {
		return Claim{}, nil, fmt.Errorf("error creating a %s task: %w", req.TaskType, err)
	}
	if existing == nil && w.cfg.Observer != nil {
		w.cfg.Observer.Claimed([]wftype.Task{claim.Task}, w.cfg.Clock.Now().Sub(start))
	}
	return claim, existing, nil
}

// limitText says which of rule's limits (a store.Held reason) has no room.
func limitText(rule execution.Rule, reason string) string {
	switch reason {
	case store.HeldGlobal:
		return fmt.Sprintf("the limit of %d running tasks of this type is reached (concurrency.global)", rule.Global)
	case store.HeldPerTenant:
		return fmt.Sprintf("the tenant's limit of %d running tasks of this type is reached (concurrency.per_tenant)", rule.PerTenant)
	default:
		return fmt.Sprintf("the rate limit's starts in this %s window are used up (rate_limit)", rule.RateInterval)
	}
}

// Result is how a run ended.
type Result struct {
	// Task is the task's row after the run (re-read; the claimed row when
	// the re-read failed).
	Task wftype.Task
	// Status is the status the worker wrote: COMPLETED, PENDING (a retry),
	// FAILED or DEAD_LETTER. It is empty when the worker wrote nothing (see
	// the error).
	Status wftype.TaskStatus
	// RunErr is the run's own error (nil on success), as written to the task.
	RunErr error
}

// Errors of Run when it writes no result.
var (
	// ErrLeaseLost: the task was cancelled, rescued or finished by someone
	// else while the worker ran it; its result was dropped.
	ErrLeaseLost = errors.New("the worker lost the task's lease; its result was dropped")
	// ErrStopped: the worker was stopped (its context ended) before the task
	// ended. A task the worker claimed itself is handed back to PENDING; one
	// it ran under a remote runner's claim is left to that runner.
	ErrStopped = errors.New("the worker was stopped before the task ended")
)

// Run runs a claimed task with its runner and reporters, extends its lease
// while it runs, and writes its outcome. It returns the outcome written, or
// ErrLeaseLost or ErrStopped (with the run's error joined) when it wrote
// none, or an error when the write failed.
//
// With tracing on, the run is a "wf.run" span and the write of its outcome
// a "wf.finish" span under it, as the dispatcher's are (see traceRun): the
// runner, its events and the tasks they cause continue the run's trace.
func (w *Worker) Run(ctx context.Context, c Claim) (res Result, err error) {
	task := c.Task
	rule := w.cfg.Rules.For(&task)
	log := w.cfg.Logger.With("task_id", task.ID, "task_type", task.TaskType, "owner", c.Lease.Owner, "attempt", c.Lease.Attempt)
	ctx, span := w.traceRun(ctx, &task, c.Lease)
	if span != nil {
		defer func() {
			failed := err // the run's own error when the write went well
			if failed == nil {
				failed = res.RunErr
			}
			tracing.End(span, failed)
		}()
	}

	leaseCtx, loseLease := context.WithCancelCause(ctx)
	defer loseLease(nil)
	hbCtx, stopHeartbeat := context.WithCancel(leaseCtx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); w.heartbeat(hbCtx, loseLease, &task, c.Lease, rule.Lease, log) }()

	timeout := rule.Timeout
	if w.cfg.MaxTimeout > 0 {
		timeout = min(timeout, w.cfg.MaxTimeout)
	}
	began := w.cfg.Clock.Now()
	outputs, runErr := execution.Execute(leaseCtx, execution.Run{
		Task: &task, Runner: w.cfg.Capabilities[rule.Pair], Reporters: w.cfg.Reporters,
		Timeout: timeout, Clock: w.cfg.Clock, Logger: log,
	})
	ran := w.cfg.Clock.Now().Sub(began)
	stopHeartbeat()
	<-hbDone

	switch {
	case errors.Is(context.Cause(leaseCtx), ErrLeaseLost):
		log.WarnContext(ctx, "lease lost while running; the result is dropped", append(execution.TaskAttrs(&task), "err", runErr)...)
		return Result{Task: task}, errors.Join(ErrLeaseLost, runErr)
	case ctx.Err() != nil && runErr != nil && !w.cfg.FinishWhenStopped:
		// Stopped mid-run; a run that ended well just before is written.
		if c.Own {
			w.handBack(ctx, &task, c.Lease, log)
		}
		return Result{Task: task}, errors.Join(ErrStopped, runErr)
	}

	o, err := w.traceWrite(ctx, span, &task, func() (store.Finish, error) {
		return w.write(ctx, &task, c.Lease, rule, outputs, runErr)
	})
	if err != nil {
		return Result{Task: task}, errors.Join(err, runErr)
	}
	if w.cfg.Observer != nil {
		w.cfg.Observer.Finished(&task, o.Status, ran)
	}
	res = Result{Task: task, Status: o.Status, RunErr: runErr}
	readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if t, err := w.cfg.Store.GetTask(readCtx, task.ID); err == nil {
		res.Task = t
	}
	log.InfoContext(ctx, "task ended", "status", o.Status, "err", runErr)
	return res, nil
}

// traceRun starts the run's span. A run whose context already holds a span
// (a SYNCHRONOUS run: the request's server span) is its child, so the
// request span is the parent of the run. Otherwise a task enqueued in a
// trace (its stored traceparent) continues it, as in the dispatcher: a
// "wf.claim" span marks the claim of a remote worker (wf exec) and the run
// gets a "wf.run" span. With no span and no stored trace (tracing off) there
// is no span: span is nil and ctx unchanged.
func (w *Worker) traceRun(ctx context.Context, t *wftype.Task, lease store.WorkerLease) (context.Context, trace.Span) {
	if w.cfg.TracerProvider == nil {
		return ctx, nil
	}
	attrs := trace.WithAttributes(attribute.String("wf.task_id", t.ID.String()), attribute.String("wf.task_type", t.TaskType),
		attribute.String("wf.schema_name", t.SchemaName), attribute.Int("wf.attempt", lease.Attempt), attribute.String("wf.owner", lease.Owner))
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if t.Traceparent == "" {
			return ctx, nil
		}
		ctx = tracing.WithTraceparent(ctx, t.Traceparent)
		_, claim := w.tracer.Start(ctx, "wf.claim "+t.TaskType, attrs)
		claim.End()
	}
	return w.tracer.Start(ctx, "wf.run "+t.TaskType, trace.WithSpanKind(trace.SpanKindConsumer), attrs)
}

// traceWrite runs write, the write of the run's outcome, in a "wf.finish"
// span under the run's span (none when the run is not traced).
func (w *Worker) traceWrite(ctx context.Context, run trace.Span, t *wftype.Task, write func() (store.Finish, error)) (store.Finish, error) {
	if run == nil {
		return write()
	}
	_, span := w.tracer.Start(ctx, "wf.finish "+t.TaskType, trace.WithAttributes(attribute.String("wf.task_id", t.ID.String())))
	o, err := write()
	if err == nil {
		span.SetAttributes(attribute.String("wf.status", string(o.Status)))
	}
	tracing.End(span, err)
	return o, err
}

// heartbeat extends the lease at least three times per lease length until
// ctx ends, and cancels the run (cause ErrLeaseLost) when the lease is gone.
func (w *Worker) heartbeat(ctx context.Context, lose context.CancelCauseFunc, task *wftype.Task, lease store.WorkerLease, length time.Duration, log *slog.Logger) {
	every := max(min(w.cfg.HeartbeatInterval, length/3), 10*time.Millisecond)
	clock.Every(ctx, w.cfg.Clock, every, func() bool {
		held, err := w.cfg.Store.ExtendLease(ctx, task.ID, lease, length, w.cfg.Clock.DBNow())
		switch {
		case err != nil:
			if ctx.Err() == nil {
				log.WarnContext(ctx, "extending the lease failed; retrying at the next beat", "err", err)
			}
			return true
		case !held:
			lose(ErrLeaseLost)
			return false
		}
		return true
	})
}

// write decides the outcome of the run and writes it under the worker's
// lease (execution.FinishLeased). A failed write is retried a few times;
// the database clock (or the test clock) stamps it.
func (w *Worker) write(ctx context.Context, task *wftype.Task, lease store.WorkerLease, rule execution.Rule, outputs []byte, runErr error) (store.Finish, error) {
	// The result must reach the database even if the worker is being
	// stopped: it is the whole point of the run.
	ctx = context.WithoutCancel(ctx)
	decide := func(*wftype.Task) store.Finish {
		return execution.Outcome(task, rule, outputs, runErr, w.cfg.Clock.Now())
	}
	var (
		o   store.Finish
		err error
	)
	for attempt := range 5 {
		if attempt > 0 {
			_ = clock.Sleep(ctx, w.cfg.Clock, time.Duration(attempt)*writeRetryPause)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, o, err = execution.FinishLeased(wctx, w.cfg.Store, task.ID, lease, w.cfg.Clock.DBNow(), decide)
		cancel()
		if err == nil || errors.Is(err, wftype.ErrConflict) || errors.Is(err, wftype.ErrNotFound) {
			break
		}
		w.cfg.Logger.WarnContext(ctx, "writing the result failed; retrying", "task_id", task.ID, "err", err)
	}
	switch {
	case err == nil:
		execution.LogOutcome(ctx, w.cfg.Logger, task, o)
		return o, nil
	case errors.Is(err, wftype.ErrConflict), errors.Is(err, wftype.ErrNotFound):
		return o, errors.Join(ErrLeaseLost, err)
	default:
		return o, fmt.Errorf("error writing the result of task %s: %w", task.ID, err)
	}
}

// writeRetryPause is the pause before the second write of a result; each
// later one waits one more such pause.
const writeRetryPause = 500 * time.Millisecond

// handBack returns a task the worker claimed itself to PENDING at once, as
// a stopping dispatcher does: no retry counted, no lease to wait for.
func (w *Worker) handBack(ctx context.Context, task *wftype.Task, lease store.WorkerLease, log *slog.Logger) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := w.cfg.Store.ReleaseTasks(hctx, lease.Owner, []uuid.UUID{task.ID}); err != nil {
		log.ErrorContext(ctx, "could not hand the task back; it runs again when its lease expires", "err", err)
		return
	}
	log.InfoContext(ctx, "stopped: the task was handed back to PENDING")
}

// describeConflict says why t is not ACTIVE under lease, wrapping
// wftype.ErrConflict.
func describeConflict(t *wftype.Task, lease store.WorkerLease) error {
	switch {
	case t.Status != wftype.StatusActive:
		return fmt.Errorf("it is %s, not ACTIVE under owner %q: %w", t.Status, lease.Owner, wftype.ErrConflict)
	case t.OwnerID == nil || *t.OwnerID != lease.Owner:
		return fmt.Errorf("it is ACTIVE under owner %q, not %q: %w", deref(t.OwnerID), lease.Owner, wftype.ErrConflict)
	default:
		return fmt.Errorf("it is on attempt %d, not %d: %w", t.Attempts, lease.Attempt, wftype.ErrConflict)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
