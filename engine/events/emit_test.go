package events_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func TestEmitDedupAndTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	em := events.NewEmitter(store.New(pool))

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
	_, err = pool.Exec(ctx, `DELETE FROM tasks.events WHERE event_id = $1 AND created_at = $2`, other.Event.ID, other.Event.CreatedAt)
	require.NoError(t, err)

	// In a rolled-back transaction nothing is written.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = em.EmitTx(ctx, tx, events.Event{Type: "catalog.created"})
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM tasks.events`).Scan(&n))
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
