package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The catalog's outbox (migration 020): with the catalog in a database of
// its own, a catalog write records its events in catalog.outbox in its own
// transaction; catalog/outbox relays them into tasks.events. The statements
// on catalog.outbox run on the catalog's store, those on
// tasks.relayed_events on the queue's.

// InsertOutbox records events in catalog.outbox, in the caller's
// transaction when the store runs on one. Each event must carry its id (a
// UUIDv7): it keeps it in tasks.events.
func (s *Store) InsertOutbox(ctx context.Context, evs []NewEvent) error {
	if len(evs) == 0 {
		return nil
	}
	for _, e := range evs {
		if !IsV7(e.ID) {
			return fmt.Errorf("error recording events in the catalog's outbox: id %s is not a UUIDv7", e.ID)
		}
	}
	c := eventArraysOf(evs)
	const q = `
INSERT INTO catalog.outbox (event_id, event_type, scope, schema_name, payload, dedup_key, traceparent, source_task_id)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[], $8::uuid[])`
	_, err := s.db.Exec(ctx, q, c.ids, c.types, c.scopes, c.schemas, c.payloads, c.dedups, c.traces, c.sources)
	return wrap("recording events in the catalog's outbox", err)
}

// ClaimOutbox returns up to limit events of catalog.outbox, oldest first,
// locked for the caller's transaction (SKIP LOCKED: two relays never hold
// the same event) and, when olderThan is positive, only those recorded at
// least that long ago (the sweep leaves the newest to the writer's own
// relay).
func (s *Store) ClaimOutbox(ctx context.Context, olderThan time.Duration, limit int) ([]NewEvent, error) {
	const q = `
SELECT event_id, event_type, scope, schema_name, payload, coalesce(dedup_key, ''),
       coalesce(traceparent, ''), source_task_id
FROM catalog.outbox
WHERE created_at <= now() - $1::interval
ORDER BY event_id
LIMIT $2
FOR UPDATE SKIP LOCKED`
	return queryAll(ctx, s.db, "reading the catalog's outbox", q, func(row pgx.Row) (NewEvent, error) {
		var e NewEvent
		var payload []byte
		var source *uuid.UUID
		err := row.Scan(&e.ID, &e.EventType, &e.Scope, &e.SchemaName, &payload, &e.DedupKey, &e.Traceparent, &source)
		e.Payload = payload
		if source != nil {
			e.SourceTaskID = *source
		}
		return e, err
	}, olderThan, limit)
}

// DeleteOutbox deletes relayed events from catalog.outbox.
func (s *Store) DeleteOutbox(ctx context.Context, ids []uuid.UUID) error {
	_, err := s.db.Exec(ctx, `DELETE FROM catalog.outbox WHERE event_id = ANY($1::uuid[])`, ids)
	return wrap("deleting relayed events from the catalog's outbox", err)
}

// MarkRelayed records in tasks.relayed_events that the events ids were
// relayed and returns those not recorded before: the caller writes these
// events, in the same transaction, and no others.
func (s *Store) MarkRelayed(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	const q = `
INSERT INTO tasks.relayed_events (event_id)
SELECT unnest($1::uuid[])
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id`
	return queryAll(ctx, s.db, "recording relayed events", q, func(row pgx.Row) (uuid.UUID, error) {
		var id uuid.UUID
		return id, row.Scan(&id)
	}, ids)
}

// ForgetRelayed deletes the relay records of ids (their outbox rows are
// gone, so they cannot be relayed again) and of every event relayed before
// before (what a crash between the two deletes left), and returns how many
// it deleted.
func (s *Store) ForgetRelayed(ctx context.Context, ids []uuid.UUID, before time.Time) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM tasks.relayed_events WHERE event_id = ANY($1::uuid[]) OR relayed_at < $2`, ids, before)
	return tag.RowsAffected(), wrap("forgetting relayed events", err)
}
