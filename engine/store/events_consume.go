package store

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
)

// ClaimEventsParams selects what ClaimEvents takes.
type ClaimEventsParams struct {
	Owner string
	Limit int
	// Lease is how long the claimed events stay PROCESSING before another
	// consumer may take them back (the owner crashed).
	Lease time.Duration
	Now   *time.Time // nil: the database clock
}

// claimEventsSQL moves up to $2 due PENDING events to PROCESSING for one
// consumer, counting the attempt. The partial index on PENDING events serves
// the scan; SKIP LOCKED keeps concurrent consumers off each other's rows.
const claimEventsSQL = `
WITH c AS (
    SELECT event_id, created_at
    FROM tasks.events
    WHERE status = 'PENDING' AND run_after <= coalesce($1::timestamptz, now())
    ORDER BY run_after, event_id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE tasks.events e
SET status       = 'PROCESSING',
    owner_id     = $3,
    attempts     = e.attempts + 1,
    locked_until = coalesce($1::timestamptz, now()) + make_interval(secs => $4)
FROM c
WHERE e.event_id = c.event_id AND e.created_at = c.created_at
RETURNING e.event_id, e.created_at, e.event_type, e.scope, e.schema_name, e.payload, e.status, e.dedup_key,
          e.attempts, e.run_after, e.locked_until, e.owner_id, e.error, e.dead_lettered_at, coalesce(e.traceparent, '')`

// ClaimEvents moves up to Limit due PENDING events to PROCESSING, owned by
// Owner until the lease ends, and returns them oldest first. Each claim
// counts one attempt.
func (s *Store) ClaimEvents(ctx context.Context, p ClaimEventsParams) ([]Event, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	evs, err := queryAll(ctx, s.db, "claiming events", claimEventsSQL, scanEvent, p.Now, p.Limit, p.Owner, p.Lease.Seconds())
	if err != nil {
		return nil, err
	}
	slices.SortFunc(evs, func(a, b Event) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return slices.Compare(a.ID[:], b.ID[:])
	})
	return evs, nil
}

// EventKey locates one event row (its partition from CreatedAt).
type EventKey struct {
	ID        uuid.UUID
	CreatedAt time.Time
}

func eventKeyArrays(keys []EventKey) ([]uuid.UUID, []time.Time) {
	ids := make([]uuid.UUID, len(keys))
	at := make([]time.Time, len(keys))
	for i, k := range keys {
		ids[i], at[i] = k.ID, k.CreatedAt
	}
	return ids, at
}

// AckEvents deletes consumed events that owner still holds (PROCESSING) and
// returns the ids it deleted. An event missing from the result was taken
// back from owner (its lease expired); the caller must not act on it. Run it
// first in the transaction that creates the events' tasks: the deleted rows
// stay locked until commit, so nobody else can take them meanwhile.
func (s *Store) AckEvents(ctx context.Context, owner string, keys []EventKey) ([]uuid.UUID, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	const q = `
DELETE FROM tasks.events e
USING unnest($1::uuid[], $2::timestamptz[]) AS a(event_id, created_at)
WHERE e.event_id = a.event_id AND e.created_at = a.created_at
  AND e.status = 'PROCESSING' AND e.owner_id = $3
RETURNING e.event_id`
	ids, at := eventKeyArrays(keys)
	return collectIDs(ctx, s, "acknowledging events", q, ids, at, owner)
}

// EventFailure is the outcome of an event whose processing failed.
type EventFailure struct {
	Key   EventKey
	Error string
	// DeadLetter moves the event to DEAD_LETTER; otherwise it goes back to
	// PENDING, due RetryIn after the statement's time (the database's, as
	// for the claims that compare run_after with it).
	DeadLetter bool
	RetryIn    time.Duration
}

// FailEvents records failed attempts of events owner still holds: back to
// PENDING with a later run_after, or DEAD_LETTER (which releases the event's
// dedup key). It returns the ids it changed.
func (s *Store) FailEvents(ctx context.Context, owner string, now *time.Time, failures []EventFailure) ([]uuid.UUID, error) {
	if len(failures) == 0 {
		return nil, nil
	}
	const q = `
WITH f AS (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::bool[], $5::float8[])
        AS f(event_id, created_at, error, dead, retry_in)
)
UPDATE tasks.events e
SET status           = CASE WHEN f.dead THEN 'DEAD_LETTER' ELSE 'PENDING' END,
    error            = f.error,
    run_after        = CASE WHEN f.dead THEN e.run_after
                            ELSE coalesce($6::timestamptz, now()) + make_interval(secs => f.retry_in) END,
    dead_lettered_at = CASE WHEN f.dead THEN coalesce($6::timestamptz, now()) END,
    owner_id         = NULL,
    locked_until     = NULL
FROM f
WHERE e.event_id = f.event_id AND e.created_at = f.created_at
  AND e.status = 'PROCESSING' AND e.owner_id = $7
RETURNING e.event_id`
	n := len(failures)
	ids, at := make([]uuid.UUID, n), make([]time.Time, n)
	msgs, dead, retryIn := make([]string, n), make([]bool, n), make([]float64, n)
	for i, f := range failures {
		ids[i], at[i], msgs[i], dead[i], retryIn[i] = f.Key.ID, f.Key.CreatedAt, f.Error, f.DeadLetter, max(f.RetryIn, 0).Seconds()
	}
	return collectIDs(ctx, s, "recording failed events", q, ids, at, msgs, dead, retryIn, now, owner)
}

// ReleaseEvents hands events owner still holds back to PENDING, due at
// runAfter (nil: now), without counting the attempt: the consumer could not
// finish them for a reason of its own (shutdown, a database error).
func (s *Store) ReleaseEvents(ctx context.Context, owner string, keys []EventKey, runAfter *time.Time) ([]uuid.UUID, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	const q = `
UPDATE tasks.events e
SET status = 'PENDING', owner_id = NULL, locked_until = NULL,
    attempts = greatest(e.attempts - 1, 0), run_after = coalesce($4::timestamptz, now())
FROM unnest($1::uuid[], $2::timestamptz[]) AS r(event_id, created_at)
WHERE e.event_id = r.event_id AND e.created_at = r.created_at
  AND e.status = 'PROCESSING' AND e.owner_id = $3
RETURNING e.event_id`
	ids, at := eventKeyArrays(keys)
	return collectIDs(ctx, s, "releasing events", q, ids, at, owner, runAfter)
}

// HoldEvents hands events owner still holds, and that are younger than
// grace at now (nil: the database clock), back to PENDING, due when they
// are grace old (created_at + grace), without counting the attempt; it
// returns the ids it held. The consumer holds the events none of its
// subscriptions match: an instance running a newer spec set may want them
// (a rolling deploy), and once they are grace old, whoever claims them
// settles them. Those it leaves (grace old already) stay PROCESSING for
// the caller to settle; deciding the age here, by the clock the claims
// compare run_after with, means an event held is never due again before it
// is grace old.
func (s *Store) HoldEvents(ctx context.Context, owner string, keys []EventKey, grace time.Duration, now *time.Time) ([]uuid.UUID, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	const q = `
UPDATE tasks.events e
SET status = 'PENDING', owner_id = NULL, locked_until = NULL,
    attempts = greatest(e.attempts - 1, 0), run_after = e.created_at + make_interval(secs => $4)
FROM unnest($1::uuid[], $2::timestamptz[]) AS h(event_id, created_at)
WHERE e.event_id = h.event_id AND e.created_at = h.created_at
  AND e.status = 'PROCESSING' AND e.owner_id = $3
  AND e.created_at + make_interval(secs => $4) > coalesce($5::timestamptz, now())
RETURNING e.event_id`
	ids, at := eventKeyArrays(keys)
	return collectIDs(ctx, s, "holding unmatched events", q, ids, at, owner, grace.Seconds(), now)
}

// RecoveredEvents is what RecoverEvents changed.
type RecoveredEvents struct {
	Requeued     int
	DeadLettered int
}

// RecoverEvents takes back up to limit PROCESSING events whose lease ended
// before now (their consumer crashed or stalled): PENDING again, or
// DEAD_LETTER once they used maxAttempts attempts, so an event that kills
// its consumer cannot loop for ever.
func (s *Store) RecoverEvents(ctx context.Context, now *time.Time, maxAttempts, limit int) (RecoveredEvents, error) {
	const q = `
WITH x AS (
    SELECT event_id, created_at
    FROM tasks.events
    WHERE status = 'PROCESSING' AND locked_until < coalesce($1::timestamptz, now())
    ORDER BY locked_until
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
recovered AS (
    UPDATE tasks.events e
    SET status           = CASE WHEN e.attempts >= $3 THEN 'DEAD_LETTER' ELSE 'PENDING' END,
        error            = 'lease expired: consumer ' || coalesce(e.owner_id, 'unknown')
                           || ' stopped before finishing attempt ' || e.attempts,
        dead_lettered_at = CASE WHEN e.attempts >= $3 THEN coalesce($1::timestamptz, now()) END,
        run_after        = coalesce($1::timestamptz, now()),
        owner_id         = NULL,
        locked_until     = NULL
    FROM x
    WHERE e.event_id = x.event_id AND e.created_at = x.created_at
    RETURNING e.status
)
SELECT count(*) FILTER (WHERE status = 'PENDING'), count(*) FILTER (WHERE status = 'DEAD_LETTER') FROM recovered`
	var r RecoveredEvents
	err := s.db.QueryRow(ctx, q, now, limit, maxAttempts).Scan(&r.Requeued, &r.DeadLettered)
	return r, wrap("recovering events with expired leases", err)
}
