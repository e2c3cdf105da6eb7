package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Event is one row of the tasks.events outbox.
type Event struct {
	ID             uuid.UUID       `json:"event_id"`
	CreatedAt      time.Time       `json:"created_at"`
	EventType      string          `json:"event_type"`
	Scope          string          `json:"scope"`
	SchemaName     string          `json:"schema_name"`
	Payload        json.RawMessage `json:"payload"`
	Status         string          `json:"status"`
	DedupKey       *string         `json:"dedup_key,omitempty"`
	Attempts       int             `json:"attempts"`
	RunAfter       time.Time       `json:"run_after"`
	LockedUntil    *time.Time      `json:"locked_until,omitempty"`
	OwnerID        *string         `json:"owner_id,omitempty"`
	Error          *string         `json:"error,omitempty"`
	DeadLetteredAt *time.Time      `json:"dead_lettered_at,omitempty"`
	// Traceparent is the W3C trace context the event was emitted in ("" when
	// tracing was off): the tasks its subscriptions create continue it.
	Traceparent string `json:"-"`
}

// Event statuses.
const (
	EventPending    = "PENDING"
	EventProcessing = "PROCESSING"
	EventDeadLetter = "DEAD_LETTER"
)

// eventColumns is the column list every event query returns, in scanEvent's order.
const eventColumns = `event_id, created_at, event_type, scope, schema_name, payload, status, dedup_key,
    attempts, run_after, locked_until, owner_id, error, dead_lettered_at, coalesce(traceparent, '') AS traceparent`

func scanEvent(row pgx.Row) (Event, error) {
	var e Event
	var payload []byte
	err := row.Scan(&e.ID, &e.CreatedAt, &e.EventType, &e.Scope, &e.SchemaName, &payload, &e.Status, &e.DedupKey,
		&e.Attempts, &e.RunAfter, &e.LockedUntil, &e.OwnerID, &e.Error, &e.DeadLetteredAt, &e.Traceparent)
	if err != nil {
		return e, err
	}
	e.Payload = payload
	e.CreatedAt, e.RunAfter = e.CreatedAt.UTC(), e.RunAfter.UTC()
	for _, p := range []**time.Time{&e.LockedUntil, &e.DeadLetteredAt} {
		if *p != nil {
			u := (*p).UTC()
			*p = &u
		}
	}
	return e, nil
}

// NewEvent is one event to write to the outbox.
type NewEvent struct {
	ID         uuid.UUID // optional: a UUIDv7 is generated when zero
	EventType  string
	Scope      string // PLATFORM | CATALOG | COLLECTION | ASSET
	SchemaName string
	Payload    json.RawMessage
	DedupKey   string // "" means no deduplication
	// Traceparent is the W3C trace context of the span that emitted the
	// event ("" when tracing is off).
	Traceparent string
}

// EventInsertResult is the outcome of inserting one NewEvent.
type EventInsertResult struct {
	Event Event
	// Duplicate: a PENDING or PROCESSING event already held the dedup key;
	// Event is that event and nothing was inserted.
	Duplicate bool
	// Released: the event holding the dedup key finished (was acknowledged
	// or dead-lettered) between the insert and the look-up of the holder:
	// nothing was inserted, nothing found, and Event holds only the id. The
	// key is free now: insert the event again (the same NewEvent, see
	// InsertSettled). InsertEvents does not retry by itself, so that the
	// rest of a batch, already inserted, is never inserted twice.
	Released bool
}

const insertEventsSQL = `
WITH input AS (
    SELECT *
    FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $9::text[])
         AS i(event_id, created_at, event_type, scope, schema_name, payload, dedup_key, traceparent)
),
dedup AS (
    INSERT INTO tasks.event_dedup (schema_name, dedup_key, event_id, event_created_at)
    SELECT schema_name, dedup_key, event_id, created_at FROM input WHERE dedup_key IS NOT NULL
    ON CONFLICT (schema_name, dedup_key) DO NOTHING
    RETURNING event_id
),
inserted AS (
    INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, payload, dedup_key, traceparent)
    SELECT i.event_id, i.created_at, i.event_type, i.scope, i.schema_name, i.payload, i.dedup_key, i.traceparent
    FROM input i
    WHERE i.dedup_key IS NULL OR i.event_id IN (SELECT event_id FROM dedup)
    RETURNING ` + eventColumns + `
),
notified AS (
    SELECT count(pg_notify($8, q.event_type)) AS n FROM (SELECT DISTINCT event_type FROM inserted) q
)
SELECT ` + eventColumns + ` FROM inserted, notified`

// existingEventsByDedupSQL reads the live events holding (tenant, key)
// pairs: a key is only ever compared within its tenant.
const existingEventsByDedupSQL = `
SELECT d.schema_name, d.dedup_key, e.event_id, e.created_at, e.event_type, e.scope, e.schema_name, e.payload, e.status, e.dedup_key,
       e.attempts, e.run_after, e.locked_until, e.owner_id, e.error, e.dead_lettered_at, coalesce(e.traceparent, '')
FROM unnest($1::text[], $2::text[]) AS k(schema_name, dedup_key)
JOIN tasks.event_dedup d ON d.schema_name = k.schema_name AND d.dedup_key = k.dedup_key
JOIN tasks.events e ON e.event_id = d.event_id AND e.created_at = d.event_created_at`

// InsertEvents writes events to the outbox in one statement and notifies the
// events channel once per event type, in the caller's transaction when the
// store runs on one. An event whose dedup key is held by a PENDING or
// PROCESSING event is not written; its result is that event, marked
// Duplicate (or Released, when that event finished meanwhile). The partitions for the events' months must exist.
func (s *Store) InsertEvents(ctx context.Context, events []NewEvent) ([]EventInsertResult, error) {
	if len(events) == 0 {
		return nil, nil
	}
	n := len(events)
	ids := make([]uuid.UUID, n)
	created := make([]time.Time, n)
	types, scopes, schemas := make([]string, n), make([]string, n), make([]string, n)
	payloads := make([][]byte, n)
	dedups := make([]*string, n)
	traces := make([]*string, n)
	for i := range events {
		e := &events[i]
		if e.ID == uuid.Nil {
			id, _, err := NewID()
			if err != nil {
				return nil, err
			}
			e.ID = id
		}
		if !IsV7(e.ID) {
			return nil, fmt.Errorf("error inserting event: id %s is not a UUIDv7", e.ID)
		}
		ids[i], created[i] = e.ID, IDTime(e.ID)
		types[i], scopes[i], schemas[i] = e.EventType, e.Scope, e.SchemaName
		payloads[i] = e.Payload
		if len(payloads[i]) == 0 {
			payloads[i] = []byte("{}")
		}
		if e.DedupKey != "" {
			k := e.DedupKey
			dedups[i] = &k
		}
		if e.Traceparent != "" {
			tp := e.Traceparent
			traces[i] = &tp
		}
	}
	inserted, err := queryAll(ctx, s.db, "inserting events", insertEventsSQL, scanEvent, ids, created, types, scopes, schemas, payloads, dedups, s.channels.Events, traces)
	if err != nil {
		return nil, err
	}
	keys := make([]tenantKey, n)
	for i := range events {
		keys[i] = tenantKey{events[i].SchemaName, events[i].DedupKey}
	}
	settled, err := settleInserts(ctx, ids, keys, inserted, func(e Event) uuid.UUID { return e.ID }, s.eventsByDedupKey)
	if err != nil {
		return nil, err
	}
	results := make([]EventInsertResult, n)
	for i, r := range settled {
		results[i] = EventInsertResult{Event: r.row, Duplicate: r.duplicate, Released: r.released}
		if r.released {
			results[i].Event.ID = ids[i]
		}
	}
	return results, nil
}

func (s *Store) eventsByDedupKey(ctx context.Context, schemas, keys []string) (map[tenantKey]Event, error) {
	return holdersByKey(ctx, s.db, "looking up deduplicated events", existingEventsByDedupSQL, scanEvent, schemas, keys)
}
