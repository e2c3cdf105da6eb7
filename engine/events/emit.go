// Package events is the durable events outbox: emitting events (alone, in
// the caller's transaction, or in bulk) and, in the consumer, turning them
// into the tasks their Subscription specs ask for.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/wftype"
)

// Scopes an event may have.
const (
	ScopePlatform   = "PLATFORM"
	ScopeCatalog    = "CATALOG"
	ScopeCollection = "COLLECTION"
	ScopeAsset      = "ASSET"
)

// Event is one event to emit.
type Event struct {
	// Type names the event, e.g. "catalog.deleted" (lower-case words and dots).
	Type string
	// Scope is PLATFORM, CATALOG, COLLECTION or ASSET; default PLATFORM.
	Scope string
	// SchemaName is the tenant; default "system".
	SchemaName string
	// Payload is a JSON object; default {}.
	Payload json.RawMessage
	// DedupKey, when set, makes the emit a no-op while an event with the same
	// key is still pending.
	DedupKey string
	// SourceTask is the task that emits the event; uuid.Nil means the task
	// running in the emitting context (wftype.SourceTask), if any. The
	// event records it, and the task keeps the event in its record of
	// emitted events (its page lists them).
	SourceTask uuid.UUID
}

// Result is the outcome of one emit.
type Result struct {
	Event     store.Event
	Duplicate bool
}

// ErrInvalidEvent is wrapped by every validation failure.
var ErrInvalidEvent = errors.New("invalid event")

var eventTypeRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$`)

// Emitter writes events to the outbox.
type Emitter struct {
	store  *store.Store
	traced bool // store the trace context of the emitting span
}

// NewEmitter returns an emitter writing through st (on a pool).
func NewEmitter(st *store.Store) *Emitter { return &Emitter{store: st} }

// Store returns the store the emitter writes through (the queue's).
func (e *Emitter) Store() *store.Store { return e.store }

// WithTracing returns a copy of the emitter that stores, with each event,
// the trace context of the span it is emitted in, so that the tasks its
// subscriptions create continue that trace (see internal/tracing). Without
// it (tracing off) no trace context is stored.
func (e *Emitter) WithTracing() *Emitter {
	c := *e
	c.traced = true
	return &c
}

// Emit writes one event in its own transaction.
func (e *Emitter) Emit(ctx context.Context, ev Event) (Result, error) {
	return first(e.emit(ctx, e.store, []Event{ev}))
}

// EmitTx writes one event inside the caller's transaction: it exists, and
// wakes consumers, only if the caller commits.
func (e *Emitter) EmitTx(ctx context.Context, tx pgx.Tx, ev Event) (Result, error) {
	return e.EmitIn(ctx, e.store.WithTx(tx), ev)
}

// EmitIn writes one event through st, a store bound to a transaction
// (store.InTx): inside wf, transactions are the store's; EmitTx is for
// programs that hold a pgx.Tx of their own.
func (e *Emitter) EmitIn(ctx context.Context, st *store.Store, ev Event) (Result, error) {
	return first(e.emit(ctx, st, []Event{ev}))
}

// first is the one result of a call for one event.
func first(res []Result, err error) (Result, error) {
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// EmitMany writes many events in one statement.
func (e *Emitter) EmitMany(ctx context.Context, evs []Event) ([]Result, error) {
	return e.emit(ctx, e.store, evs)
}

// InvalidEventError is a validation failure of one field of an event. It
// wraps ErrInvalidEvent.
type InvalidEventError struct {
	// Field is the event's field at fault, as the HTTP API and the CLI spell
	// it: event_type, scope, schema_name, dedup_key or payload.
	Field string
	// Reason says what is wrong and what is expected.
	Reason string
}

// Error implements error.
func (e *InvalidEventError) Error() string {
	return fmt.Sprintf("%s: %s %s", ErrInvalidEvent, e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidEvent) hold.
func (e *InvalidEventError) Unwrap() error { return ErrInvalidEvent }

func invalid(field, format string, args ...any) error {
	return &InvalidEventError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate checks an event and fills its defaults.
func Validate(ev Event) (store.NewEvent, error) {
	if !eventTypeRE.MatchString(ev.Type) || len(ev.Type) > 255 {
		return store.NewEvent{}, invalid("event_type", "%q must be lower-case words joined by dots (e.g. catalog.deleted), at most 255 characters", ev.Type)
	}
	if ev.Scope == "" {
		ev.Scope = ScopePlatform
	}
	switch ev.Scope {
	case ScopePlatform, ScopeCatalog, ScopeCollection, ScopeAsset:
	default:
		return store.NewEvent{}, invalid("scope", "%q must be PLATFORM, CATALOG, COLLECTION or ASSET", ev.Scope)
	}
	if ev.SchemaName == "" {
		ev.SchemaName = "system"
	}
	if len(ev.SchemaName) > 255 {
		return store.NewEvent{}, invalid("schema_name", "is limited to 255 characters")
	}
	if len(ev.DedupKey) > 512 {
		return store.NewEvent{}, invalid("dedup_key", "is limited to 512 characters")
	}
	if len(ev.Payload) == 0 {
		ev.Payload = json.RawMessage(`{}`)
	}
	var obj map[string]any
	if err := json.Unmarshal(ev.Payload, &obj); err != nil || obj == nil {
		return store.NewEvent{}, invalid("payload", "must be a JSON object")
	}
	id, _, err := store.NewID()
	if err != nil {
		return store.NewEvent{}, err
	}
	return store.NewEvent{ID: id, EventType: ev.Type, Scope: ev.Scope, SchemaName: ev.SchemaName, Payload: ev.Payload, DedupKey: ev.DedupKey}, nil
}

// Rows validates evs and returns the rows to write, each with its
// provenance from ctx: the trace context of the span they are emitted in
// (when the emitter is traced) and their source task. The catalog's outbox
// (catalog/outbox) records these rows when it cannot write them at once.
func (e *Emitter) Rows(ctx context.Context, evs ...Event) ([]store.NewEvent, error) {
	rows := make([]store.NewEvent, len(evs))
	// The span the events are emitted in (a request's, a task run's): the
	// tasks their subscriptions create continue its trace.
	traceparent := ""
	if e.traced {
		traceparent = tracing.Traceparent(ctx)
	}
	for i, ev := range evs {
		row, err := Validate(ev)
		if err != nil {
			return nil, err
		}
		row.Traceparent = traceparent
		row.SourceTaskID = ev.SourceTask
		if row.SourceTaskID == uuid.Nil {
			row.SourceTaskID, _ = wftype.SourceTask(ctx)
		}
		rows[i] = row
	}
	return rows, nil
}

func (e *Emitter) emit(ctx context.Context, st *store.Store, evs []Event) ([]Result, error) {
	rows, err := e.Rows(ctx, evs...)
	if err != nil {
		return nil, err
	}
	// On the store's pool, never inside a caller's transaction.
	months := make([]time.Time, len(rows))
	for i := range rows {
		months[i] = store.IDTime(rows[i].ID)
	}
	if err := st.EnsureMonths(ctx, months...); err != nil {
		return nil, err
	}
	inserted, err := store.InsertSettled(ctx, rows, st.InsertEvents,
		func(r store.EventInsertResult) bool { return r.Released },
		func(e store.NewEvent) string { return "event with dedup key " + strconv.Quote(e.DedupKey) })
	if err != nil {
		return nil, fmt.Errorf("error emitting events: %w", err)
	}
	out := make([]Result, len(inserted))
	for i, r := range inserted {
		out[i] = Result{Event: r.Event, Duplicate: r.Duplicate}
	}
	return out, nil
}
