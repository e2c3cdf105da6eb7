package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/wfhq/wf/catalog/outbox"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

type bundle struct {
	ctx            context.Context
	qpool, cpool   *pgxpool.Pool
	queue, catalog *store.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	q, c := dbtest.NewSplitDatabases(t)
	b := &bundle{ctx: t.Context(), qpool: dbtest.PoolFor(t, q), cpool: dbtest.PoolFor(t, c)}
	b.catalog = store.New(b.cpool)
	b.queue = store.New(b.qpool).WithCatalog(b.catalog)
	return b
}

func event(i int) events.Event {
	return events.Event{Type: "asset.updated", Scope: events.ScopeAsset, SchemaName: "s_acme",
		Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
}

// record records evs in the outbox in one catalog transaction, as a
// registry write does, and returns their ids.
func (b *bundle) record(t *testing.T, evs ...events.Event) []uuid.UUID {
	t.Helper()
	require.NoError(t, b.catalog.InTx(b.ctx, func(st *store.Store) error { return outbox.Record(b.ctx, st, evs...) }))
	rows, err := b.cpool.Query(b.ctx, `SELECT event_id FROM catalog.outbox ORDER BY event_id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	return ids
}

func (b *bundle) count(t *testing.T, pool *pgxpool.Pool, q string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(b.ctx, q).Scan(&n), q)
	return n
}

// TestRelayExactlyOnce: a relay cut off after the queue committed (the
// events written, the outbox not yet emptied) is finished by the next one
// without writing any event twice; every event keeps the id it was given in
// the catalog's transaction; a rolled-back catalog write leaves nothing.
func TestRelayExactlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.record(t, event(0), event(1), event(2))
	require.Len(t, ids, 3)

	// The cut-off relay: event 0 reached the queue, recorded as relayed,
	// and its outbox row stayed.
	rows, err := b.catalog.ClaimOutbox(b.ctx, 0, 1)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.NoError(t, b.queue.EnsureMonths(b.ctx, store.IDTime(rows[0].ID)))
	require.NoError(t, b.queue.InTx(b.ctx, func(qt *store.Store) error {
		fresh, err := qt.MarkRelayed(b.ctx, []uuid.UUID{rows[0].ID})
		require.Len(t, fresh, 1)
		if err != nil {
			return err
		}
		_, err = qt.InsertEvents(b.ctx, rows)
		return err
	}))

	n, err := outbox.Relay(b.ctx, b.catalog, b.queue, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 2, n, "event 0 was in the queue already")
	require.Equal(t, 3, b.count(t, b.qpool, `SELECT count(*) FROM tasks.events`))
	require.Equal(t, 3, b.count(t, b.qpool, fmt.Sprintf(`SELECT count(*) FROM tasks.events WHERE event_id IN ('%s', '%s', '%s')`, ids[0], ids[1], ids[2])))
	require.Equal(t, 0, b.count(t, b.cpool, `SELECT count(*) FROM catalog.outbox`))
	require.Equal(t, 0, b.count(t, b.qpool, `SELECT count(*) FROM tasks.relayed_events`))

	// Again: nothing left, nothing written.
	n, err = outbox.Relay(b.ctx, b.catalog, b.queue, 0, 0)
	require.NoError(t, err)
	require.Zero(t, n)

	// A catalog write that rolls back takes its events with it.
	errRollback := errors.New("rolled back")
	err = b.catalog.InTx(b.ctx, func(st *store.Store) error {
		require.NoError(t, outbox.Record(b.ctx, st, event(9)))
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Equal(t, 0, b.count(t, b.cpool, `SELECT count(*) FROM catalog.outbox`))

	// An invalid event is refused before anything is recorded.
	err = b.catalog.InTx(b.ctx, func(st *store.Store) error {
		return outbox.Record(b.ctx, st, events.Event{Type: "Not An Event"})
	})
	require.ErrorIs(t, err, events.ErrInvalidEvent)
}

// TestRelayConcurrent: 8 writers record 60 events each (a transaction per
// 3) while 4 relays run at once, in small batches; at the end every event
// is in the queue exactly once.
func TestRelayConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const writers, perWriter = 8, 60
	var wg sync.WaitGroup
	stop := make(chan struct{})
	relayErrs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := outbox.Relay(b.ctx, b.catalog, b.queue, 0, 7); err != nil {
					relayErrs <- err
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	var writersWG sync.WaitGroup
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			for i := 0; i < perWriter; i += 3 {
				err := b.catalog.InTx(b.ctx, func(st *store.Store) error {
					return outbox.Record(b.ctx, st, event(w*1000+i), event(w*1000+i+1), event(w*1000+i+2))
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	writersWG.Wait()
	close(stop)
	wg.Wait()
	close(relayErrs)
	for err := range relayErrs {
		require.NoError(t, err)
	}
	_, err := outbox.Relay(b.ctx, b.catalog, b.queue, 0, 0)
	require.NoError(t, err)
	require.Equal(t, writers*perWriter, b.count(t, b.qpool, `SELECT count(*) FROM tasks.events`))
	require.Equal(t, writers*perWriter, b.count(t, b.qpool, `SELECT count(DISTINCT payload->>'n') FROM tasks.events`))
	require.Equal(t, 0, b.count(t, b.cpool, `SELECT count(*) FROM catalog.outbox`))
}

// TestSweeperLeavesTheNewestToTheirWriter: a sweep relays only events older
// than its age, so that it does not race the writer's own relay.
func TestSweeperLeavesTheNewestToTheirWriter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := outbox.NewSweeper(outbox.SweeperConfig{Queue: store.New(b.qpool)})
	require.Error(t, err, "a queue store without the catalog apart")
	b.record(t, event(1))
	young, err := outbox.NewSweeper(outbox.SweeperConfig{Queue: b.queue, Age: time.Hour})
	require.NoError(t, err)
	n, err := young.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = b.cpool.Exec(b.ctx, `UPDATE catalog.outbox SET created_at = created_at - interval '2 hours'`)
	require.NoError(t, err)
	n, err = young.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// TestRelayKeepsProvenance: an event a Writer records in the outbox while a
// task runs, inside a traced span, reaches the queue with that task as its
// source and the span's trace context; a row recorded as the previous
// release did (no provenance columns) relays with none.
func TestRelayKeepsProvenance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := outbox.NewWriter(b.catalog, events.NewEmitter(b.queue).WithTracing())

	source, _, err := store.NewID()
	require.NoError(t, err)
	ctx, span := sdktrace.NewTracerProvider().Tracer("test").Start(wftype.WithSourceTask(b.ctx, source), "catalog write")
	defer span.End()
	require.NoError(t, w.InTx(ctx, func(st *store.Store) error { return w.Emit(ctx, st, event(1)) }))

	// The previous release's row: written without the provenance columns.
	old, _, err := store.NewID()
	require.NoError(t, err)
	_, err = b.cpool.Exec(b.ctx, `INSERT INTO catalog.outbox (event_id, event_type, scope, schema_name, payload)
VALUES ($1, 'asset.updated', 'ASSET', 's_acme', '{"n": 2}')`, old)
	require.NoError(t, err)
	n, err := outbox.Relay(b.ctx, b.catalog, b.queue, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the writer relayed its own event at once")

	var gotSource *uuid.UUID
	var traceparent *string
	require.NoError(t, b.qpool.QueryRow(b.ctx, `SELECT source_task_id, traceparent FROM tasks.events WHERE payload->>'n' = '1'`).
		Scan(&gotSource, &traceparent))
	require.NotNil(t, gotSource)
	require.Equal(t, source, *gotSource)
	require.NotNil(t, traceparent)
	require.Contains(t, *traceparent, span.SpanContext().TraceID().String())
	require.Equal(t, tracing.Traceparent(ctx), *traceparent)

	require.NoError(t, b.qpool.QueryRow(b.ctx, `SELECT source_task_id, traceparent FROM tasks.events WHERE event_id = $1`, old).
		Scan(&gotSource, &traceparent))
	require.Nil(t, gotSource)
	require.Nil(t, traceparent)
}
