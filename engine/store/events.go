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
}

// Event statuses.
const (
	EventPending    = "PENDING"
	EventProcessing = "PROCESSING"
	EventDeadLetter = "DEAD_LETTER"
)

// eventColumns is the column list every event query returns, in scanEvent's order.
const eventColumns = `event_id, created_at, event_type, scope, schema_name, payload, status, dedup_key,
    attempts, run_after, locked_until, owner_id, error, dead_lettered_at`

func scanEvent(row pgx.Row) (Event, error) {
	var e Event
	var payload []byte
	err := row.Scan(&e.ID, &e.CreatedAt, &e.EventType, &e.Scope, &e.SchemaName, &payload, &e.Status, &e.DedupKey,
		&e.Attempts, &e.RunAfter, &e.LockedUntil, &e.OwnerID, &e.Error, &e.DeadLetteredAt)
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

func collectEvents(rows pgx.Rows, doing string) ([]Event, error) {
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, wrap(doing, err)
		}
		out = append(out, e)
	}
	return out, wrap(doing, rows.Err())
}

// NewEvent is one event to write to the outbox.
type NewEvent struct {
	ID         uuid.UUID // optional: a UUIDv7 is generated when zero
	EventType  string
	Scope      string // PLATFORM | CATALOG | COLLECTION | ASSET
	SchemaName string
	Payload    json.RawMessage
	DedupKey   string // "" means no deduplication
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
    FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[])
         AS i(event_id, created_at, event_type, scope, schema_name, payload, dedup_key)
),
dedup AS (
    INSERT INTO tasks.event_dedup (schema_name, dedup_key, event_id, event_created_at)
    SELECT schema_name, dedup_key, event_id, created_at FROM input WHERE dedup_key IS NOT NULL
    ON CONFLICT (schema_name, dedup_key) DO NOTHING
    RETURNING event_id
),
inserted AS (
    INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, payload, dedup_key)
    SELECT i.event_id, i.created_at, i.event_type, i.scope, i.schema_name, i.payload, i.dedup_key
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
       e.attempts, e.run_after, e.locked_until, e.owner_id, e.error, e.dead_lettered_at
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
	}
	rows, err := s.db.Query(ctx, insertEventsSQL, ids, created, types, scopes, schemas, payloads, dedups, s.channels.Events)
	if err != nil {
		return nil, wrap("inserting events", err)
	}
	inserted, err := collectEvents(rows, "inserting events")
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]Event, len(inserted))
	for _, e := range inserted {
		byID[e.ID] = e
	}
	results := make([]EventInsertResult, n)
	var dupSchemas, dupKeys []string
	for i, e := range events {
		if row, ok := byID[e.ID]; ok {
			results[i] = EventInsertResult{Event: row}
		} else {
			dupSchemas, dupKeys = append(dupSchemas, e.SchemaName), append(dupKeys, e.DedupKey)
		}
	}
	if len(dupKeys) == 0 {
		return results, nil
	}
	existing, err := s.eventsByDedupKey(ctx, dupSchemas, dupKeys)
	if err != nil {
		return nil, err
	}
	for i, e := range events {
		if _, ok := byID[e.ID]; ok {
			continue
		}
		row, ok := existing[tenantKey{e.SchemaName, e.DedupKey}]
		if !ok {
			// The holder finished between the two statements.
			results[i] = EventInsertResult{Event: Event{ID: e.ID}, Released: true}
			continue
		}
		results[i] = EventInsertResult{Event: row, Duplicate: true}
	}
	return results, nil
}

func (s *Store) eventsByDedupKey(ctx context.Context, schemas, keys []string) (map[tenantKey]Event, error) {
	rows, err := s.db.Query(ctx, existingEventsByDedupSQL, schemas, keys)
	if err != nil {
		return nil, wrap("looking up deduplicated events", err)
	}
	defer rows.Close()
	out := make(map[tenantKey]Event, len(keys))
	for rows.Next() {
		var key tenantKey
		var e Event
		var payload []byte
		if err := rows.Scan(&key.schema, &key.key, &e.ID, &e.CreatedAt, &e.EventType, &e.Scope, &e.SchemaName, &payload, &e.Status, &e.DedupKey,
			&e.Attempts, &e.RunAfter, &e.LockedUntil, &e.OwnerID, &e.Error, &e.DeadLetteredAt); err != nil {
			return nil, wrap("reading deduplicated events", err)
		}
		e.Payload = payload
		out[key] = e
	}
	return out, wrap("looking up deduplicated events", rows.Err())
}
