// Package client enqueues tasks: the Go API behind `wf enqueue`, the HTTP
// API and event subscriptions. It checks inputs against the task type's
// schema, evaluates its dedup-key expression, makes sure the month's
// partition exists, and inserts PENDING tasks with their notification in one
// statement — standalone, in the caller's transaction, or in bulk.
package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/wftype"
)

// ErrUnknownTaskType is returned for a task type no spec declares.
var ErrUnknownTaskType = errors.New("unknown task type")

// ValidationError lists every way a request breaks its task type's rules.
type ValidationError struct {
	TaskType string
	// Inputs holds the input schema violations, each with its JSON pointer.
	Inputs spec.InputErrors
	// Message describes a problem that is not about one input (schema name, dedup key).
	Message string
	// Field is the request's field Message is about (schema_name, inputs,
	// dedup_key, run_at), "" when none.
	Field string
}

// Error implements error.
func (e *ValidationError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("invalid %s task: %s", e.TaskType, e.Message)
	}
	return fmt.Sprintf("invalid inputs for task type %s: %s", e.TaskType, e.Inputs.Error())
}

// Request is one task to enqueue.
type Request struct {
	TaskType string
	// SchemaName is the tenant; default "system" (required for CATALOG and ASSET scopes).
	SchemaName string
	// Inputs is a JSON object; default {}.
	Inputs json.RawMessage
	// DedupKey overrides the spec's dedup-key expression when set.
	DedupKey string
	// Unique, when set, overrides the task type's unique period for the
	// task's key (a subscription's own unique).
	Unique *spec.Unique
	// Priority overrides the spec's priority when set.
	Priority *int
	// MaxRetries overrides the spec's max_retries when set (a workflow
	// step's retry override).
	MaxRetries *int
	// RunAfter delays the task; nil means now.
	RunAfter *time.Time
	// Traceparent is the trace context to store with the task; "" means
	// that of the enqueue's span (see Client.WithTracerProvider). When
	// every request of a call gives one, the call starts no span of its own.
	Traceparent string
}

// Result is the outcome of one request.
type Result struct {
	Task wftype.Task
	// Replaced is the task this one cancelled to take its dedup key (its
	// type's on_duplicate); nil when none.
	Replaced *uuid.UUID
	// Duplicate: a live task already held the dedup key; Task is that task
	// and nothing was created.
	Duplicate bool
}

// Client enqueues tasks of the spec set's types.
type Client struct {
	store *store.Store
	// specs is shared by the copies With… make, so SetSpecs reaches them all.
	specs  *specsRef
	files  Files // nil: file inputs are checked only when the task runs
	tracer trace.Tracer
	traced bool // a tracer provider was given: store trace contexts
}

// Files checks the inputs a task type's spec declares as files (files:)
// before a task is created: a local location must lie in the tenant's
// folder. objio.Opener implements it (internal/objio, with files.local_roots).
type Files interface {
	// CheckFile returns an error, saying why, when loc is not a location
	// the tenant (a schema_name) may name.
	CheckFile(tenant, loc string) error
}

// WithFiles returns a copy of c that checks file inputs with f when it
// creates a task, so a location outside the tenant's folder is refused
// there (a ValidationError at the input's pointer) rather than failing the
// task when it runs.
func (c *Client) WithFiles(f Files) *Client {
	out := *c
	out.files = f
	return &out
}

// CheckFile checks one location for tenant as file inputs are checked:
// nil when the client has no Files.
func (c *Client) CheckFile(tenant, loc string) error {
	if c.files == nil {
		return nil
	}
	return c.files.CheckFile(tenant, loc)
}

// New returns a client that writes through st (on a pool) for specs.
func New(st *store.Store, specs *spec.Set) *Client {
	ref := &specsRef{}
	ref.Store(specs)
	return &Client{store: st, specs: ref, tracer: tracing.Tracer(nil)}
}

// WithTracerProvider returns a copy of the client that traces each enqueue
// with tp (a span "wf.enqueue", whose context every task it creates keeps:
// see internal/tracing). A nil tp turns tracing off.
func (c *Client) WithTracerProvider(tp trace.TracerProvider) *Client {
	cc := *c
	cc.tracer, cc.traced = tracing.Tracer(tp), tp != nil
	return &cc
}

// Traced reports whether the client stores trace contexts (a tracer
// provider was given): code that emits events beside it traces alike.
func (c *Client) Traced() bool { return c.traced }

// Specs returns the spec set the client validates against.
func (c *Client) Specs() *spec.Set { return c.specs.Load() }

// Enqueue creates one task in its own transaction.
func (c *Client) Enqueue(ctx context.Context, req Request) (Result, error) {
	return first(c.EnqueueMany(ctx, []Request{req}))
}

// EnqueueTx creates one task inside the caller's transaction: it exists, and
// its notification is sent, only if the caller commits.
func (c *Client) EnqueueTx(ctx context.Context, tx pgx.Tx, req Request) (Result, error) {
	return c.EnqueueIn(ctx, c.store.WithTx(tx), req)
}

// EnqueueIn creates one task through st, a store bound to a transaction
// (store.InTx): inside wf, transactions are the store's, and EnqueueTx is
// for programs that embed wf and hold a pgx.Tx of their own.
func (c *Client) EnqueueIn(ctx context.Context, st *store.Store, req Request) (Result, error) {
	return first(c.enqueue(ctx, st, []Request{req}))
}

// Duplicate returns the task that holds the dedup key req would get (its
// own, or its task type's dedup rule's): a live one, or one that ended
// within its type's unique period; nil when req has none or the key is free: what an enqueue of req would answer with instead of
// creating a task, without enqueueing. A request that does not validate
// returns the enqueue's error.
func (c *Client) Duplicate(ctx context.Context, req Request) (*wftype.Task, error) {
	t, err := c.prepare(req, nil)
	if err != nil || t.DedupKey == "" {
		return nil, err
	}
	return c.store.LiveTaskByDedupKey(ctx, t.SchemaName, t.DedupKey, store.IDTime(t.ID))
}

// first is the one result of a call for one request.
func first(res []Result, err error) (Result, error) {
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// EnqueueMany creates many tasks in one round trip (one statement). Every
// request is validated first; one invalid request fails the whole call and
// creates nothing.
func (c *Client) EnqueueMany(ctx context.Context, reqs []Request) ([]Result, error) {
	return c.enqueue(ctx, c.store, reqs)
}

// EnqueueManyTx is EnqueueMany inside the caller's transaction.
func (c *Client) EnqueueManyTx(ctx context.Context, tx pgx.Tx, reqs []Request) ([]Result, error) {
	return c.enqueue(ctx, c.store.WithTx(tx), reqs)
}

// EnqueueManyIn is EnqueueMany through st, a store bound to a transaction
// (store.InTx; see EnqueueIn).
func (c *Client) EnqueueManyIn(ctx context.Context, st *store.Store, reqs []Request) ([]Result, error) {
	return c.enqueue(ctx, st, reqs)
}

func (c *Client) enqueue(ctx context.Context, st *store.Store, reqs []Request) (_ []Result, err error) {
	// A caller that gives every task its trace context (the event
	// consumer: each event's span) has made the spans that enqueue them.
	given := len(reqs) > 0
	for _, r := range reqs {
		given = given && r.Traceparent != ""
	}
	if c.traced && !given && len(reqs) > 0 {
		var span trace.Span
		ctx, span = c.tracer.Start(ctx, "wf.enqueue "+reqs[0].TaskType, trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("wf.task_type", reqs[0].TaskType), attribute.Int("wf.tasks", len(reqs))))
		defer func() { tracing.End(span, err) }()
	}
	traceparent := ""
	if c.traced {
		traceparent = tracing.Traceparent(ctx)
	}
	tasks := make([]store.NewTask, len(reqs))
	var last lastInputs
	for i, req := range reqs {
		nt, err := c.prepare(req, &last)
		if err != nil {
			return nil, err
		}
		if c.traced {
			nt.Traceparent = cmp.Or(req.Traceparent, traceparent)
		}
		tasks[i] = nt
	}
	months := make([]time.Time, len(tasks))
	for i := range tasks {
		months[i] = store.IDTime(tasks[i].ID)
	}
	if err := st.EnsureMonths(ctx, months...); err != nil {
		return nil, err
	}
	inserted, err := insertSettled(ctx, st, tasks)
	if err != nil {
		return nil, fmt.Errorf("error enqueueing: %w", err)
	}
	out := make([]Result, len(inserted))
	for i, r := range inserted {
		out[i] = Result{Task: r.Task, Duplicate: r.Duplicate, Replaced: r.Replaced}
	}
	return out, nil
}

// insertSettled inserts tasks, inserting again those whose dedup key's
// holder finished meanwhile (see store.InsertSettled).
func insertSettled(ctx context.Context, st *store.Store, tasks []store.NewTask) ([]store.InsertResult, error) {
	return store.InsertSettled(ctx, tasks, st.InsertTasks,
		func(r store.InsertResult) bool { return r.Released },
		func(t store.NewTask) string { return "task with dedup key " + strconv.Quote(t.DedupKey) })
}

// checkFiles checks the inputs tt declares as files against the tenant's
// folder, one error per refused location.
func (c *Client) checkFiles(tt *spec.TaskType, tenant string, inputs map[string]any) spec.InputErrors {
	if c.files == nil {
		return nil
	}
	var errs spec.InputErrors
	for _, name := range tt.FileInputs() {
		loc, ok := inputs[name].(string)
		if !ok {
			continue // absent: the schema decided whether it may be
		}
		if err := c.files.CheckFile(tenant, loc); err != nil {
			errs = append(errs, spec.InputError{Pointer: "/" + name, Message: err.Error()})
		}
	}
	return errs
}

// onDuplicate is the store's form of tt's on_duplicate.
func onDuplicate(tt *spec.TaskType) store.OnDuplicate {
	switch tt.OnDuplicate() {
	case spec.DuplicateReplaceQueued:
		return store.ReplaceQueued
	case spec.DuplicateCancelRunning:
		return store.CancelRunning
	}
	return store.KeepExisting
}

// prepare validates a request against its task type and fills what the
// spec decides. last, when not nil, is the inputs the call checked last.
func (c *Client) prepare(req Request, last *lastInputs) (store.NewTask, error) {
	tt, ok := c.specs.Load().TaskType(req.TaskType)
	if !ok {
		return store.NewTask{}, fmt.Errorf("%w %q", ErrUnknownTaskType, req.TaskType)
	}
	schema := req.SchemaName
	if schema == "" {
		if tt.Scope() != wftype.ScopeSystem {
			return store.NewTask{}, &ValidationError{TaskType: tt.Name(), Field: "schema_name",
				Message: fmt.Sprintf("a %s-scoped task needs a schema_name (its tenant)", tt.Scope())}
		}
		schema = wftype.SystemSchema
	}
	if len(schema) > 255 {
		return store.NewTask{}, &ValidationError{TaskType: tt.Name(), Field: "schema_name", Message: "schema_name is longer than 255 characters"}
	}
	if req.RunAfter != nil && tt.Mode() == wftype.ModeSync {
		return store.NewTask{}, &ValidationError{TaskType: tt.Name(), Field: "run_at",
			Message: "a SYNCHRONOUS task runs in front of its caller at once; it cannot be delayed"}
	}
	raw := req.Inputs
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	obj, err := last.check(tt, raw)
	if err != nil {
		return store.NewTask{}, err
	}
	if ie := c.checkFiles(tt, schema, obj); len(ie) > 0 {
		return store.NewTask{}, &ValidationError{TaskType: tt.Name(), Inputs: ie}
	}
	key := req.DedupKey
	if key == "" {
		k, ok, err := tt.DedupKey(schema, obj)
		if err != nil {
			return store.NewTask{}, &ValidationError{TaskType: tt.Name(), Field: "inputs", Message: "error evaluating the dedup key: " + err.Error()}
		}
		if ok {
			key = k
		}
	}
	if len(key) > spec.MaxDedupKeyLength {
		return store.NewTask{}, &ValidationError{TaskType: tt.Name(), Field: "dedup_key",
			Message: fmt.Sprintf("dedup key is %d characters long; the limit is %d", len(key), spec.MaxDedupKeyLength)}
	}
	priority, maxRetries := tt.Priority(), tt.MaxRetries()
	if req.Priority != nil {
		priority = *req.Priority
	}
	if req.MaxRetries != nil {
		maxRetries = *req.MaxRetries
	}
	id, _, err := store.NewID()
	if err != nil {
		return store.NewTask{}, err
	}
	unique := tt.Unique()
	if req.Unique != nil {
		unique = *req.Unique
	}
	return store.NewTask{
		ID: id, SchemaName: schema, Scope: tt.Scope(), ExecutionMode: tt.Mode(), TaskType: tt.Name(),
		DedupKey: key, UniqueFor: unique.Period, UniqueStates: unique.States, OnDuplicate: onDuplicate(tt),
		Inputs: raw, Priority: priority, MaxRetries: maxRetries, RunAfter: req.RunAfter,
	}, nil
}
