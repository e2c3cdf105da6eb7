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

// EventFilter selects events for ListEvents. Zero fields do not filter.
type EventFilter struct {
	Statuses   []string
	EventTypes []string
	// AfterTime and AfterID are the keyset cursor: events strictly older
	// than this (created_at, event_id).
	AfterTime *time.Time
	AfterID   *uuid.UUID
	Limit     int // default 100, at most 1000
}

// ListEvents returns outbox events newest first, filtered, one page at a time
// (keyset pagination on (created_at, event_id)).
func (s *Store) ListEvents(ctx context.Context, f EventFilter) ([]Event, error) {
	const q = `
SELECT ` + eventColumns + `
FROM tasks.events
WHERE ($1::text[] IS NULL OR status = ANY($1))
  AND ($2::text[] IS NULL OR event_type = ANY($2))
  AND ($3::timestamptz IS NULL OR (created_at, event_id) < ($3, $4::uuid))
ORDER BY created_at DESC, event_id DESC
LIMIT $5`
	return queryAll(ctx, s.db, "listing events", q, scanEvent, nilIfEmpty(f.Statuses), nilIfEmpty(f.EventTypes), f.AfterTime, f.AfterID, pageLimit(f.Limit))
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
	// SourceTaskID is the task that emitted the event (uuid.Nil: none). The
	// event records it, and the task's emitted_events record (migration
	// 021) gains the event, in the same transaction.
	SourceTaskID uuid.UUID
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

// insertEventsSQL inserts events (the arrays $1…$7, $9, $10), skipping
// those whose dedup key a live event holds, and notifies $8 once per event
// type.
const insertEventsSQL = insertEventsHeadSQL + insertEventsTailSQL

// insertEventsRecordedSQL is insertEventsSQL for events of one source
// task, whose record of emitted events (migration 021) gains the inserted
// ones in the same statement: $11 holds each event's entry ({"event_id",
// "event_type", "created_at"}, NULL for an event without the source), in
// the order of $1; $12 and $13 are the task's id and creation time. The
// task is updated by primary key and partition, given as parameters, as
// recordEmittedSQL does: the partition is known when the statement is
// planned (an UPDATE whose partition comes from the inserted rows locked
// every partition).
const insertEventsRecordedSQL = insertEventsHeadSQL + `,
recorded AS (
    UPDATE tasks.tasks t
    SET emitted_events = tasks.append_emitted(t.emitted_events, r.entries)
    FROM (SELECT jsonb_agg(e.entry ORDER BY e.n) AS entries
          FROM unnest($1::uuid[], $11::jsonb[]) WITH ORDINALITY AS e(event_id, entry, n)
          WHERE e.entry IS NOT NULL AND e.event_id IN (SELECT event_id FROM inserted)) r
    WHERE t.task_id = $12 AND t."timestamp" = $13 AND r.entries IS NOT NULL
)` + insertEventsTailSQL

// takeEventKeysSQL takes the dedup keys of the events of the CTE input
// (schema_name, dedup_key, event_id, created_at) in tasks.event_dedup; a
// key another live event holds stays its. It returns the event_id of each
// key it took: an insert's events and a requeued dead letter take their keys
// the same way.
const takeEventKeysSQL = `(
    INSERT INTO tasks.event_dedup (schema_name, dedup_key, event_id, event_created_at)
    SELECT schema_name, dedup_key, event_id, created_at FROM input WHERE dedup_key IS NOT NULL
    ON CONFLICT (schema_name, dedup_key) DO NOTHING
    RETURNING event_id
)`

const insertEventsHeadSQL = `
WITH input AS (
    SELECT *
    FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $9::text[],
                $10::uuid[])
         AS i(event_id, created_at, event_type, scope, schema_name, payload, dedup_key, traceparent, source_task_id)
),
dedup AS ` + takeEventKeysSQL + `,
inserted AS (
    INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, payload, dedup_key, traceparent, source_task_id)
    SELECT i.event_id, i.created_at, i.event_type, i.scope, i.schema_name, i.payload, i.dedup_key, i.traceparent, i.source_task_id
    FROM input i
    WHERE i.dedup_key IS NULL OR i.event_id IN (SELECT event_id FROM dedup)
    RETURNING ` + eventColumns + `, source_task_id
)`

const insertEventsTailSQL = `,
notified AS (
    SELECT count(pg_notify($8, q.event_type)) AS n FROM (SELECT DISTINCT event_type FROM inserted) q
)
SELECT ` + eventColumns + `, source_task_id FROM inserted, notified`

// insertedEvent is a row insertEventsSQL returns: the event and its source.
type insertedEvent struct {
	Event
	source *uuid.UUID
}

func scanInsertedEvent(row pgx.Row) (insertedEvent, error) {
	var e insertedEvent
	var payload []byte
	err := row.Scan(&e.ID, &e.CreatedAt, &e.EventType, &e.Scope, &e.SchemaName, &payload, &e.Status, &e.DedupKey,
		&e.Attempts, &e.RunAfter, &e.LockedUntil, &e.OwnerID, &e.Error, &e.DeadLetteredAt, &e.Traceparent, &e.source)
	if err != nil {
		return e, err
	}
	e.Payload = payload
	e.CreatedAt, e.RunAfter = e.CreatedAt.UTC(), e.RunAfter.UTC()
	return e, nil
}

// recordEmittedSQL appends events ($3, a JSON array of {"event_id",
// "event_type", "created_at"}) to the record of the task that emitted them
// (migration 021), keeping the last 50: one row, by primary key and
// partition. It is its own statement, run only for events that have a
// source: inside the insert, an UPDATE of the partitioned task table whose
// partition is not a constant locked every partition on every emit, and
// deadlocked with partition maintenance.
const recordEmittedSQL = `
UPDATE tasks.tasks SET emitted_events = tasks.append_emitted(emitted_events, $3::jsonb)
WHERE task_id = $1 AND "timestamp" = $2`

// emittedEntry is one event in a task's record of emitted events.
type emittedEntry struct {
	EventID   uuid.UUID `json:"event_id"`
	EventType string    `json:"event_type"`
	CreatedAt time.Time `json:"created_at"`
}

// recordEmitted appends the inserted events that have a source to their
// source tasks' records, one statement per source task (events of one
// source are recorded by insertEventsRecordedSQL instead).
func (s *Store) recordEmitted(ctx context.Context, rows []insertedEvent) error {
	bySource := map[uuid.UUID][]emittedEntry{}
	var order []uuid.UUID
	for _, r := range rows {
		if r.source == nil {
			continue
		}
		if _, ok := bySource[*r.source]; !ok {
			order = append(order, *r.source)
		}
		bySource[*r.source] = append(bySource[*r.source], emittedEntry{r.ID, r.EventType, r.CreatedAt})
	}
	for _, id := range order {
		doc, err := json.Marshal(bySource[id])
		if err != nil {
			return fmt.Errorf("error recording emitted events: %w", err)
		}
		if _, err := s.db.Exec(ctx, recordEmittedSQL, id, IDTime(id), doc); err != nil {
			return wrap("recording emitted events", err)
		}
	}
	return nil
}

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
	// source is the events' source task when they have one; sources
	// counts the changes of source along them (1: all from one task).
	var source uuid.UUID
	sources := 0
	for i := range events {
		if id := events[i].SourceTaskID; id != uuid.Nil && id != source {
			source = id
			sources++
		}
	}
	if !s.inTx && sources > 1 {
		// The events and their source tasks' records commit together: one
		// statement for one source (insertEventsRecordedSQL), a
		// transaction for more.
		return inTxValue(ctx, s, func(tx *Store) ([]EventInsertResult, error) { return tx.InsertEvents(ctx, events) })
	}
	for i := range events {
		if err := assignID(&events[i].ID, "inserting event"); err != nil {
			return nil, err
		}
	}
	cols := eventArraysOf(events)
	ids, created, n := cols.ids, make([]time.Time, len(events)), len(events)
	for i := range events {
		created[i] = IDTime(ids[i])
	}
	sql, args := insertEventsSQL, []any{ids, created, cols.types, cols.scopes, cols.schemas, cols.payloads, cols.dedups,
		s.channels.Events, cols.traces, cols.sources}
	if sources == 1 {
		entries := make([][]byte, n)
		for i := range events {
			if events[i].SourceTaskID == source {
				b, err := json.Marshal(emittedEntry{ids[i], events[i].EventType, created[i]})
				if err != nil {
					return nil, fmt.Errorf("error recording emitted events: %w", err)
				}
				entries[i] = b
			}
		}
		sql, args = insertEventsRecordedSQL, append(args, entries, source, IDTime(source))
	}
	rows, err := queryAll(ctx, s.db, "inserting events", sql, scanInsertedEvent, args...)
	if err != nil {
		return nil, err
	}
	inserted := make([]Event, len(rows))
	for i, r := range rows {
		inserted[i] = r.Event
	}
	if sources > 1 {
		if err := s.recordEmitted(ctx, rows); err != nil {
			return nil, err
		}
	}
	results := make([]EventInsertResult, n)
	err = settleInserts(ctx, ids, func(i int) tenantKey { return tenantKey{events[i].SchemaName, events[i].DedupKey} },
		inserted, func(e *Event) uuid.UUID { return e.ID }, s.eventsByDedupKey,
		func(i int, row *Event, duplicate, released bool) {
			results[i] = EventInsertResult{Event: *row, Duplicate: duplicate, Released: released}
			if released {
				results[i].Event.ID = ids[i]
			}
		})
	if err != nil {
		return nil, err
	}
	return results, nil
}

func (s *Store) eventsByDedupKey(ctx context.Context, schemas, keys []string) (map[tenantKey]Event, error) {
	return holdersByKey(ctx, s.db, "looking up deduplicated events", existingEventsByDedupSQL, scanEvent, schemas, keys)
}

// eventArrays are the columns of events as the arrays an unnest(…) insert
// binds: "" and uuid.Nil become NULL, an empty payload {}.
type eventArrays struct {
	ids                    []uuid.UUID
	types, scopes, schemas []string
	payloads               [][]byte
	dedups, traces         []*string
	sources                []*uuid.UUID
}

// eventArraysOf returns the columns of events (whose ids are set).
func eventArraysOf(events []NewEvent) eventArrays {
	n := len(events)
	c := eventArrays{ids: make([]uuid.UUID, n), types: make([]string, n), scopes: make([]string, n), schemas: make([]string, n),
		payloads: make([][]byte, n), dedups: make([]*string, n), traces: make([]*string, n), sources: make([]*uuid.UUID, n)}
	for i, e := range events {
		c.ids[i], c.types[i], c.scopes[i], c.schemas[i], c.payloads[i] = e.ID, e.EventType, e.Scope, e.SchemaName, e.Payload
		if len(c.payloads[i]) == 0 {
			c.payloads[i] = []byte("{}")
		}
		if e.DedupKey != "" {
			c.dedups[i] = &e.DedupKey
		}
		if e.Traceparent != "" {
			c.traces[i] = &e.Traceparent
		}
		if e.SourceTaskID != uuid.Nil {
			c.sources[i] = &e.SourceTaskID
		}
	}
	return c
}
