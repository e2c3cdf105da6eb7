package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestOrphansWithTheCatalogApart: with the registry in a database of its
// own (WithCatalog), the janitor dead-letters the live tasks of a tenant
// the registry does not hold, keeps those of a registered tenant and of
// system, and leaves alone a task too young to be judged (its tenant may
// have been registered after the registry was read); a tenant's pause is
// checked against that registry too.
func TestOrphansWithTheCatalogApart(t *testing.T) {
	t.Parallel()
	queueURL, catalogURL := dbtest.NewSplitDatabases(t)
	qpool, cpool := dbtest.PoolFor(t, queueURL), dbtest.PoolFor(t, catalogURL)
	ctx := t.Context()
	st := store.New(qpool).WithCatalog(store.New(cpool))
	require.True(t, st.CatalogApart())
	require.False(t, store.New(qpool).WithCatalog(store.New(qpool)).CatalogApart(), "one database is not apart")
	_, err := cpool.Exec(ctx, `INSERT INTO catalog.catalogs (catalog_id, schema_name) VALUES ('alive', 's_alive')`)
	require.NoError(t, err)

	old := clock.Now().Add(-10 * time.Minute)
	task := func(schema string, at time.Time) store.NewTask {
		id, err := store.NewIDAt(at)
		require.NoError(t, err)
		nt := newTask("x")
		nt.ID = id
		if schema != wftype.SystemSchema {
			nt.SchemaName, nt.Scope = schema, wftype.ScopeCatalog
		}
		return nt
	}
	// Ten minutes ago may be last month: its partition must exist.
	require.NoError(t, st.EnsureMonths(ctx, old, clock.Now()))
	res, err := st.InsertTasks(ctx, []store.NewTask{
		task("s_alive", old), task("s_gone", old), task(wftype.SystemSchema, old), task("s_new", clock.Now()),
	})
	require.NoError(t, err)

	n, err := st.DeadLetterOrphans(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for i, want := range []wftype.TaskStatus{wftype.StatusPending, wftype.StatusDeadLetter, wftype.StatusPending, wftype.StatusPending} {
		got, err := st.GetTask(ctx, res[i].Task.ID)
		require.NoError(t, err)
		require.Equal(t, want, got.Status, "task %d (%s)", i, got.SchemaName)
	}
	var events int
	require.NoError(t, qpool.QueryRow(ctx, `SELECT count(*) FROM tasks.events WHERE event_type = 'task.dead_lettered' AND schema_name = 's_gone'`).Scan(&events))
	require.Equal(t, 1, events)

	_, _, err = st.PauseQueue(ctx, store.PauseParams{Kind: store.PauseTenant, Name: "s_alive"})
	require.NoError(t, err)
	_, _, err = st.PauseQueue(ctx, store.PauseParams{Kind: store.PauseTenant, Name: "s_gone"})
	require.ErrorIs(t, err, wftype.ErrNotFound)
}
