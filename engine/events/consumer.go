package events

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/tracing"
)

// Consumer defaults.
const (
	DefaultBatchSize   = 100
	DefaultLease       = time.Minute
	DefaultMaxAttempts = 5
	DefaultInterval    = 10 * time.Second
	// DefaultUnmatchedGrace is how long an event no subscription of a
	// consumer matches is kept for an instance that may (one deployed
	// after it, during a rolling deploy) before it is deleted.
	DefaultUnmatchedGrace = 15 * time.Minute
	maxEventErrorLen      = 4 << 10
)

// ConsumerConfig configures a Consumer. Zero fields take the defaults noted.
type ConsumerConfig struct {
	// Store runs the consumer's statements on a pool.
	Store *store.Store
	// Client creates the subscribed tasks; it holds the spec set whose task
	// types they are.
	Client *client.Client
	// Specs holds the Subscription specs.
	Specs *spec.Set
	// Runs starts the workflow runs of the subscriptions that name a
	// workflow (engine/workflow); without it, an event such a subscription
	// matches fails.
	Runs RunStarter
	// Owner identifies this instance on claimed events (required).
	Owner string
	// BatchSize is how many events one claim takes. Default 100.
	BatchSize int
	// Lease is how long a claimed event stays PROCESSING before another
	// consumer takes it back. Default 1m.
	Lease time.Duration
	// MaxAttempts: an event that failed this many times is DEAD_LETTER.
	// Default 5.
	MaxAttempts int
	// Backoff is the delay after the attempts-th failure. Default
	// 2^(attempts-1) seconds, at most 5 minutes.
	Backoff func(attempts int) time.Duration
	// Interval: Run without a bus looks for work every Interval; with a
	// bus it takes back expired leases of crashed consumers at most every
	// Interval, on a signal. Default 10s.
	Interval time.Duration
	// UnmatchedGrace: an event none of Specs' subscriptions matches is
	// deleted only once it is this old; younger, it is handed back (without
	// counting an attempt), due when it is this old, so that an instance
	// running a newer spec set (a rolling deploy that adds a Subscription)
	// can consume it meanwhile. Default DefaultUnmatchedGrace.
	UnmatchedGrace time.Duration
	// Inactive are task types this instance cannot serve because their
	// service is not configured (runnerset.Set.Unserved), each with why:
	// the subscriptions that create them are inactive here, as if this
	// instance's specs had none, so an event only they match is an
	// unmatched one (held for UnmatchedGrace, for an instance that serves
	// the type, then deleted) and never leaves a task nobody will run.
	Inactive map[string]string
	Clock    clock.Clock
	Logger   *slog.Logger
	// TracerProvider traces each consumed event that carries a trace
	// context (a span "wf.event", in the trace it was emitted in, whose
	// context the tasks it creates keep); nil means tracing is off.
	TracerProvider trace.TracerProvider
}

// DefaultEventBackoff is the default retry delay of a failed event: 1s,
// 2s, 4s… after the 1st, 2nd, 3rd… failure, at most 5 minutes.
func DefaultEventBackoff(attempts int) time.Duration {
	return min(time.Second<<min(max(attempts-1, 0), 20), 5*time.Minute)
}

// ConsumerResult says what one RunOnce changed.
type ConsumerResult struct {
	// Claimed events in the batch.
	Claimed int
	// Consumed events: their tasks created and the events deleted.
	Consumed int
	// Tasks created (deduplicated ones not counted).
	Tasks int
	// Runs of workflows started (deduplicated ones not counted).
	Runs int
	// Retried events: failed, back to PENDING with a backoff.
	Retried int
	// DeadLettered events: failed for the last time.
	DeadLettered int
	// Recovered events taken back from crashed consumers (lease expired).
	Recovered int
	// Lost events: taken back from this consumer before it finished (its
	// lease expired); another consumer handles them.
	Lost int
	// Held events: no subscription matched them and they were younger than
	// UnmatchedGrace; handed back, due when they are that old.
	Held int
}

// Consumer turns outbox events into the tasks their Subscription specs ask
// for. Any number of consumers, in any number of instances, share one
// outbox: each claims its own batch with SKIP LOCKED.
//
// For each claimed event it evaluates every matching subscription first
// (pure work), then in one transaction per batch deletes the events it
// still owns, creates the tasks of those events in one statement, and
// records the failures. An event whose evaluation fails (an expression
// error at run time, an unknown task type, inputs that break the task
// type's schema) fails alone: the rest of its batch goes on. A failed event
// is retried with backoff and, at its MaxAttempts-th failure, moved to
// DEAD_LETTER with the reason. A consumer that crashes leaves its events
// PROCESSING until their lease ends; any consumer then takes them back.
//
// An event that no subscription matches is deleted with no task once it is
// UnmatchedGrace old, so the outbox never keeps an event nobody will read:
// the engine runs a consumer on every instance with specs, whether or not
// any Subscription exists. Younger, it is handed back once, due when it is
// that old (one hand-back and one deletion, never a claim loop): during a
// rolling deploy an instance still on the old specs leaves the events a
// newly added Subscription wants to the instances that run it. A
// subscription added later so sees every event written from when an
// instance runs it, provided the instances without it are gone within
// UnmatchedGrace of that; such events it may see only UnmatchedGrace after
// they were written (when an old instance claimed them first). Instances
// whose subscriptions differ for good (not a deploy under way) must not
// both consume (engine.Config.NoEventConsumer).
type Consumer struct {
	cfg    ConsumerConfig
	log    *slog.Logger
	tracer trace.Tracer
}

// NewConsumer fills defaults, validates cfg and returns a Consumer.
func NewConsumer(cfg ConsumerConfig) (*Consumer, error) {
	if cfg.Store == nil || cfg.Client == nil || cfg.Specs == nil {
		return nil, errors.New("error creating event consumer: Store, Client and Specs are required")
	}
	if cfg.Owner == "" {
		return nil, errors.New("error creating event consumer: no owner id")
	}
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.Lease = cmp.Or(cfg.Lease, DefaultLease)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, DefaultMaxAttempts)
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.UnmatchedGrace = cmp.Or(cfg.UnmatchedGrace, DefaultUnmatchedGrace)
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultEventBackoff
	}
	cfg.Clock = clock.Or(cfg.Clock)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.BatchSize < 1 || cfg.Lease < time.Second || cfg.MaxAttempts < 1 || cfg.Interval <= 0 || cfg.UnmatchedGrace <= 0 {
		return nil, fmt.Errorf("error creating event consumer: batch size %d, lease %s, max attempts %d, interval %s and unmatched grace %s must be positive (lease at least 1s)",
			cfg.BatchSize, cfg.Lease, cfg.MaxAttempts, cfg.Interval, cfg.UnmatchedGrace)
	}
	return &Consumer{cfg: cfg, log: cfg.Logger.With("component", "event_consumer"), tracer: tracing.Tracer(cfg.TracerProvider)}, nil
}

// Run consumes events until ctx ends: at once, on every EventQueued signal
// of bus, and, with no bus, every Interval. It drains the outbox in batches
// before it waits again. It is an engine service (engine.Config.Services).
//
// With a bus, Run sends no statement of its own while the outbox is idle:
// the bus's publishers look for due events already (a follower's probe, the
// leader's sweep each poll interval), and expired leases of crashed
// consumers are taken back at most once an Interval, on one of those
// signals (batch after batch while a take-back fills one). An idle follower
// so stays at one query per poll interval.
func (c *Consumer) Run(ctx context.Context, bus *signalbus.Bus) {
	w := signalbus.NewWaker()
	var tick <-chan time.Time
	if bus != nil {
		unsub := bus.Subscribe(signalbus.EventQueued, func(string) { w.Wake() })
		defer unsub()
	} else {
		t := c.cfg.Clock.NewTicker(c.cfg.Interval)
		defer t.Stop()
		tick = t.C()
	}
	w.Wake()
	var recovered time.Time // when expired leases were last taken back
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.C():
		case <-tick:
		}
		for ctx.Err() == nil {
			now := c.cfg.Clock.Now()
			takeBack := recovered.IsZero() || now.Sub(recovered) >= c.cfg.Interval || now.Before(recovered)
			res, err := c.runOnce(ctx, takeBack)
			if err != nil {
				if ctx.Err() == nil {
					c.log.Warn("consuming events failed", "err", err)
				}
				break
			}
			more := res.Recovered >= c.cfg.BatchSize // a full take-back: there may be more
			if takeBack && !more {
				recovered = now
			}
			if res.Claimed < c.cfg.BatchSize && !more {
				break
			}
		}
	}
}

// RunOnce takes back expired leases, then claims and processes one batch.
func (c *Consumer) RunOnce(ctx context.Context) (ConsumerResult, error) {
	return c.runOnce(ctx, true)
}

// runOnce is RunOnce, taking back expired leases only when takeBack is set.
func (c *Consumer) runOnce(ctx context.Context, takeBack bool) (ConsumerResult, error) {
	var res ConsumerResult
	now := c.cfg.Clock.DBNow()
	if takeBack {
		rec, err := c.cfg.Store.RecoverEvents(ctx, now, c.cfg.MaxAttempts, c.cfg.BatchSize)
		if err != nil {
			return res, err
		}
		res.Recovered, res.DeadLettered = rec.Requeued+rec.DeadLettered, rec.DeadLettered
		if res.Recovered > 0 {
			c.log.Info("took back events from a stopped consumer", "requeued", rec.Requeued, "dead_lettered", rec.DeadLettered)
		}
	}
	claimed, err := c.cfg.Store.ClaimEvents(ctx, store.ClaimEventsParams{
		Owner: c.cfg.Owner, Limit: c.cfg.BatchSize, Lease: c.cfg.Lease, Now: now,
	})
	if err != nil {
		return res, err
	}
	res.Claimed = len(claimed)
	if len(claimed) == 0 {
		return res, nil
	}
	batch, err := c.process(ctx, claimed)
	res.Consumed, res.Tasks, res.Runs, res.Retried, res.Lost, res.Held = batch.Consumed, batch.Tasks, batch.Runs, batch.Retried, batch.Lost, batch.Held
	res.DeadLettered += batch.DeadLettered
	if err != nil {
		c.release(ctx, claimed)
		return res, err
	}
	if res.Retried > 0 || batch.DeadLettered > 0 || res.Lost > 0 {
		c.log.Info("events failed", "retried", res.Retried, "dead_lettered", batch.DeadLettered, "lost", res.Lost)
	}
	return res, nil
}

// planned is one claimed event and what it becomes.
type planned struct {
	event     store.Event
	reqs      []client.Request
	runs      []triggeredRun // the workflow runs it starts (subscription_runs.go)
	unmatched bool           // no subscription's event type matches it
	err       error          // the event fails: no task, retry or dead letter
}

// process evaluates the batch, then writes its outcome in one transaction.
func (c *Consumer) process(ctx context.Context, claimed []store.Event) (ConsumerResult, error) {
	plans := make([]planned, len(claimed))
	tasks := false
	for i, ev := range claimed {
		plans[i] = c.plan(ev)
		tasks = tasks || len(plans[i].reqs) > 0 || len(plans[i].runs) > 0
		if ev.Traceparent != "" {
			// The event's span, in the trace it was emitted in: its
			// tasks keep this span's context.
			_, span := c.tracer.Start(tracing.WithTraceparent(ctx, ev.Traceparent), "wf.event "+ev.EventType,
				trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
					attribute.String("wf.event_id", ev.ID.String()), attribute.String("wf.event_type", ev.EventType),
					attribute.Int("wf.tasks", len(plans[i].reqs))))
			tp := tracing.Traceparent(trace.ContextWithSpan(ctx, span))
			for j := range plans[i].reqs {
				plans[i].reqs[j].Traceparent = tp
			}
			defer func() { tracing.End(span, plans[i].err) }()
		}
	}
	if tasks {
		if err := c.ensurePartitions(ctx); err != nil {
			return ConsumerResult{}, fmt.Errorf("error processing %d events: %w", len(claimed), err)
		}
	}
	var res ConsumerResult
	err := c.cfg.Store.InTx(ctx, func(st *store.Store) error {
		res = ConsumerResult{}
		if tasks {
			// tasks.tasks before tasks.events, as partition maintenance
			// takes them: otherwise the two deadlock.
			if err := st.LockTasksBeforeEvents(ctx); err != nil {
				return err
			}
		}
		// Hand back the unmatched events younger than the grace: an
		// instance on a newer spec set may want them.
		var unmatched []store.EventKey
		for _, p := range plans {
			if p.err == nil && p.unmatched {
				unmatched = append(unmatched, store.EventKey{ID: p.event.ID, CreatedAt: p.event.CreatedAt})
			}
		}
		held, err := st.HoldEvents(ctx, c.cfg.Owner, unmatched, c.cfg.UnmatchedGrace, c.cfg.Clock.DBNow())
		if err != nil {
			return err
		}
		res.Held = len(held)
		heldSet := make(map[uuid.UUID]bool, len(held))
		for _, id := range held {
			heldSet[id] = true
		}
		var good []store.EventKey
		for _, p := range plans {
			if p.err == nil && !heldSet[p.event.ID] {
				good = append(good, store.EventKey{ID: p.event.ID, CreatedAt: p.event.CreatedAt})
			}
		}
		// Delete first: the rows stay locked until commit, so no other
		// consumer can take them back while their tasks are created.
		acked, err := st.AckEvents(ctx, c.cfg.Owner, good)
		if err != nil {
			return err
		}
		owned := make(map[uuid.UUID]bool, len(acked))
		for _, id := range acked {
			owned[id] = true
		}
		var reqs []client.Request
		for _, p := range plans {
			if p.err == nil && owned[p.event.ID] {
				reqs = append(reqs, p.reqs...)
			}
		}
		if len(reqs) > 0 {
			created, err := c.cfg.Client.EnqueueManyIn(ctx, st, reqs)
			if err != nil {
				return fmt.Errorf("error creating subscribed tasks: %w", err)
			}
			for _, r := range created {
				if !r.Duplicate {
					res.Tasks++
				}
			}
		}
		if res.Runs, err = c.startRuns(ctx, st, plans, owned); err != nil {
			return err
		}
		res.Consumed = len(acked)
		res.Lost = len(good) - len(acked)
		failures, dead := c.failures(plans)
		changed, err := st.FailEvents(ctx, c.cfg.Owner, c.cfg.Clock.DBNow(), failures)
		if err != nil {
			return err
		}
		res.Lost += len(failures) - len(changed)
		changedSet := make(map[uuid.UUID]bool, len(changed))
		for _, id := range changed {
			changedSet[id] = true
		}
		for _, f := range failures {
			switch {
			case !changedSet[f.Key.ID]:
			case dead[f.Key.ID]:
				res.DeadLettered++
			default:
				res.Retried++
			}
		}
		return nil
	})
	if err != nil {
		return ConsumerResult{}, fmt.Errorf("error processing %d events: %w", len(claimed), err)
	}
	return res, nil
}

// ensurePartitions makes sure the partitions of the month the batch's tasks
// fall in (their ids carry the wall clock: now, or a minute later across a
// month's end) exist before the batch's transaction opens. Created from
// inside it, by the client on another connection, their DDL would wait for
// the locks that transaction holds on the outbox until it gave up, batch
// after batch.
func (c *Consumer) ensurePartitions(ctx context.Context) error {
	now := clock.Now().UTC()
	return c.cfg.Store.EnsureMonths(ctx, now, now.Add(time.Minute))
}

// failures turns the failed plans into store outcomes.
func (c *Consumer) failures(plans []planned) ([]store.EventFailure, map[uuid.UUID]bool) {
	var out []store.EventFailure
	dead := map[uuid.UUID]bool{}
	for _, p := range plans {
		if p.err == nil {
			continue
		}
		msg := p.err.Error()
		if len(msg) > maxEventErrorLen {
			msg = msg[:maxEventErrorLen] + "…"
		}
		f := store.EventFailure{
			Key:   store.EventKey{ID: p.event.ID, CreatedAt: p.event.CreatedAt},
			Error: fmt.Sprintf("attempt %d of %d: %s", p.event.Attempts, c.cfg.MaxAttempts, msg),
		}
		if p.event.Attempts >= c.cfg.MaxAttempts {
			f.DeadLetter = true
			dead[p.event.ID] = true
		} else {
			f.RetryIn = c.cfg.Backoff(p.event.Attempts)
		}
		out = append(out, f)
	}
	return out, dead
}

// plan evaluates the subscriptions of one event into task requests.
func (c *Consumer) plan(ev store.Event) planned {
	subs := c.cfg.Specs.SubscriptionsFor(ev.EventType)
	if len(c.cfg.Inactive) > 0 {
		subs = slices.DeleteFunc(subs, func(s *spec.Subscription) bool {
			_, off := c.cfg.Inactive[s.TaskType()]
			return off
		})
	}
	p := planned{event: ev, unmatched: len(subs) == 0}
	env := map[string]any{
		"event_id":    ev.ID.String(),
		"event_type":  ev.EventType,
		"scope":       ev.Scope,
		"schema_name": ev.SchemaName,
		"payload":     ev.Payload,
		"created_at":  ev.CreatedAt,
	}
	for _, sub := range subs {
		task, ok, err := sub.Evaluate(env)
		if err != nil {
			p.err = err
			return p
		}
		if !ok {
			continue
		}
		if task.Workflow != "" {
			if p.err = c.planRun(&p, sub, task); p.err != nil {
				return p
			}
			continue
		}
		inputs, err := json.Marshal(task.Inputs)
		if err != nil {
			p.err = fmt.Errorf("error encoding the inputs of subscription %s: %w", sub.Name(), err)
			return p
		}
		req := client.Request{TaskType: task.TaskType, SchemaName: task.SchemaName, Inputs: inputs, DedupKey: task.DedupKey}
		if err := c.cfg.Client.Check(req); err != nil {
			p.err = fmt.Errorf("error creating the task of subscription %s: %w", sub.Name(), err)
			return p
		}
		p.reqs = append(p.reqs, req)
	}
	return p
}

// release hands a batch that could not be written back at once, without
// counting the attempt; events already settled are left alone.
func (c *Consumer) release(ctx context.Context, claimed []store.Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	keys := make([]store.EventKey, len(claimed))
	for i, ev := range claimed {
		keys[i] = store.EventKey{ID: ev.ID, CreatedAt: ev.CreatedAt}
	}
	at := c.cfg.Clock.Now().Add(time.Second)
	if _, err := c.cfg.Store.ReleaseEvents(ctx, c.cfg.Owner, keys, &at); err != nil {
		c.log.Warn("handing events back failed; they return when their lease ends", "events", len(keys), "err", err)
	}
}
