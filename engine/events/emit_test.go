package events_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestEmitDedupAndTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := dbtest.NewStore(t)
	em := events.NewEmitter(st)

	first, err := em.Emit(ctx, events.Event{Type: "catalog.deleted", Scope: events.ScopeCatalog, SchemaName: "s_a",
		Payload: json.RawMessage(`{"catalog_id":"a"}`), DedupKey: "del:a"})
	require.NoError(t, err)
	require.False(t, first.Duplicate)
	require.Equal(t, store.EventPending, first.Event.Status)
	require.Equal(t, store.IDTime(first.Event.ID), first.Event.CreatedAt)

	again, err := em.Emit(ctx, events.Event{Type: "catalog.deleted", SchemaName: "s_a", DedupKey: "del:a"})
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, first.Event.ID, again.Event.ID)

	// Dedup keys are per tenant: the same key in another tenant is another event.
	other, err := em.Emit(ctx, events.Event{Type: "catalog.deleted", SchemaName: "s_b", DedupKey: "del:a"})
	require.NoError(t, err)
	require.False(t, other.Duplicate)
	require.NotEqual(t, first.Event.ID, other.Event.ID)
	_, err = st.DB().Exec(ctx, `DELETE FROM tasks.events WHERE event_id = $1 AND created_at = $2`, other.Event.ID, other.Event.CreatedAt)
	require.NoError(t, err)

	// In a rolled-back transaction nothing is written.
	tx, err := st.DB().Begin(ctx)
	require.NoError(t, err)
	_, err = em.EmitTx(ctx, tx, events.Event{Type: "catalog.created"})
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	var n int
	require.NoError(t, st.DB().QueryRow(ctx, `SELECT count(*) FROM tasks.events`).Scan(&n))
	require.Equal(t, 1, n)

	for _, bad := range []events.Event{
		{Type: "Bad Type"},
		{Type: "x.y", Scope: "GALAXY"},
		{Type: "x.y", Payload: json.RawMessage(`[1]`)},
	} {
		_, err := em.Emit(ctx, bad)
		require.ErrorIs(t, err, events.ErrInvalidEvent)
	}
}

// TestEmittedEventsAreKeptWithTheTask: an event emitted in a task's run
// (the context execution gives it) names the task as its source, and the
// task keeps the event in its record after the outbox has deleted it; a
// failed outcome's task.failed is recorded by the finishing statement;
// the record keeps the last 50.
func TestEmittedEventsAreKeptWithTheTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := dbtest.NewStore(t)
	em := events.NewEmitter(st)
	inserted, err := st.InsertTasks(ctx, []store.NewTask{{SchemaName: "system", Scope: "SYSTEM", ExecutionMode: "ASYNCHRONOUS", TaskType: "noop", MaxRetries: 0}})
	require.NoError(t, err)
	id := inserted[0].Task.ID
	none, err := st.TaskEvents(ctx, id)
	require.NoError(t, err, "a task that emitted nothing exists")
	require.Empty(t, none)

	res, err := em.Emit(wftype.WithSourceTask(ctx, id), events.Event{Type: "thing.happened"})
	require.NoError(t, err)
	var source uuid.UUID
	require.NoError(t, st.DB().QueryRow(ctx, `SELECT source_task_id FROM tasks.events WHERE event_id = $1`, res.Event.ID).Scan(&source))
	require.Equal(t, id, source)
	evs, err := st.TaskEvents(ctx, id)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, res.Event.ID, evs[0].ID)
	require.Equal(t, "thing.happened", evs[0].EventType)
	require.Equal(t, "PENDING", evs[0].Status)
	require.Equal(t, res.Event.CreatedAt, evs[0].CreatedAt)

	// Consumed (deleted from the outbox): the task still lists it.
	_, err = st.DB().Exec(ctx, `DELETE FROM tasks.events WHERE event_id = $1`, res.Event.ID)
	require.NoError(t, err)
	evs, err = st.TaskEvents(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.EventConsumed, evs[0].Status)

	// An explicit source wins over the context; no source records nothing.
	_, err = em.Emit(ctx, events.Event{Type: "other.thing", SourceTask: id})
	require.NoError(t, err)
	_, err = em.Emit(ctx, events.Event{Type: "nobodys.thing"})
	require.NoError(t, err)
	// 60 more in one statement: the record keeps the last 50.
	many := make([]events.Event, 60)
	for i := range many {
		many[i] = events.Event{Type: "bulk.thing", SourceTask: id}
	}
	_, err = em.EmitMany(ctx, many)
	require.NoError(t, err)
	evs, err = st.TaskEvents(ctx, id)
	require.NoError(t, err)
	require.Len(t, evs, 50)
	for _, e := range evs {
		require.Equal(t, "bulk.thing", e.EventType)
	}

	// A failed outcome's task.failed joins the record in the finishing statement.
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Owner: "w1", Total: 1,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 1, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	msg := "bad input"
	done, err := st.FinishTasks(ctx, store.FinishParams{Owner: "w1"}, []store.Finish{{ID: id, Status: wftype.StatusFailed, Error: &msg}})
	require.NoError(t, err)
	require.Len(t, done, 1)
	var evID uuid.UUID
	require.NoError(t, st.DB().QueryRow(ctx, `SELECT event_id FROM tasks.events WHERE event_type = 'task.failed' AND source_task_id = $1`, id).Scan(&evID))
	evs, err = st.TaskEvents(ctx, id)
	require.NoError(t, err)
	require.Len(t, evs, 50)
	last := evs[len(evs)-1]
	require.Equal(t, "task.failed", last.EventType)
	require.Equal(t, evID, last.ID)
	require.Equal(t, "PENDING", last.Status)

	// A task that does not exist.
	missing, _, err := store.NewID()
	require.NoError(t, err)
	_, err = st.TaskEvents(ctx, missing)
	require.ErrorIs(t, err, wftype.ErrNotFound)
}

// TestEmitWithASourceIsOneStatement: an event emitted in a task's run is
// written, with its entry in the task's record, in one statement (no
// transaction of its own, no second statement for the record), and the
// entry is the one recorded before: event_id, event_type, created_at in
// UTC. Events of two sources still record each in its task.
func TestEmitWithASourceIsOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &dbtest.StatementLog{}
	pool := dbtest.PoolWith(t, dbtest.NewDatabase(t), func(c *pgxpool.Config) { c.ConnConfig.Tracer = log })
	st := store.New(pool)
	em := events.NewEmitter(st)
	inserted, err := st.InsertTasks(ctx, []store.NewTask{
		{SchemaName: "system", Scope: "SYSTEM", ExecutionMode: "ASYNCHRONOUS", TaskType: "noop"},
		{SchemaName: "system", Scope: "SYSTEM", ExecutionMode: "ASYNCHRONOUS", TaskType: "noop"},
	})
	require.NoError(t, err)
	id, other := inserted[0].Task.ID, inserted[1].Task.ID
	runCtx := wftype.WithSourceTask(ctx, id)
	_, err = em.Emit(runCtx, events.Event{Type: "first.thing"}) // the month's partitions looked up once
	require.NoError(t, err)

	log.Take()
	res, err := em.Emit(runCtx, events.Event{Type: "second.thing"})
	require.NoError(t, err)
	require.Len(t, log.Take(), 1, "statements per emit")

	want, err := json.Marshal(map[string]any{"event_id": res.Event.ID, "event_type": "second.thing", "created_at": res.Event.CreatedAt.UTC()})
	require.NoError(t, err)
	var same bool
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT emitted_events -> -1 = $2::jsonb, jsonb_array_length(emitted_events)
FROM tasks.tasks WHERE task_id = $1`, id, want).Scan(&same, &n))
	require.True(t, same, "the entry as recorded before: %s", want)
	require.Equal(t, 2, n)

	// A duplicate (its dedup key held) is not recorded; two sources in one
	// batch record each in its own task.
	_, err = em.EmitMany(ctx, []events.Event{
		{Type: "keyed.thing", DedupKey: "k", SourceTask: id},
		{Type: "keyed.thing", DedupKey: "k", SourceTask: id},
		{Type: "other.thing", SourceTask: other},
	})
	require.NoError(t, err)
	evs, err := st.TaskEvents(ctx, id)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	require.Equal(t, "keyed.thing", evs[2].EventType)
	evs, err = st.TaskEvents(ctx, other)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, "other.thing", evs[0].EventType)
}
