package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// connectAs opens a session connection to b's database named appName
// (application_name), closed when the test ends.
func (b *bundle) connectAs(t *testing.T, appName string) *pgx.Conn {
	t.Helper()
	cc := b.pool.Config().ConnConfig.Copy()
	cc.RuntimeParams["application_name"] = appName
	conn, err := pgx.ConnectConfig(b.ctx, cc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// serve states, as a wf run instance does, that an instance named
// "wf:<owner>" serves types; it returns its served-types connection.
func (b *bundle) serve(t *testing.T, owner string, types ...string) *pgx.Conn {
	t.Helper()
	conn := b.connectAs(t, "wf-serves:wf:"+owner)
	require.NoError(t, store.New(conn).HoldServedTypes(b.ctx, types, nil))
	return conn
}

// TestNotServed: a task type no live instance serves is not served
// (UnservedTaskTypes, and a PENDING task's waiting_reason not_served); one
// an instance holds is served while its connection lives, whoever else
// stops serving it; an instance that states nothing (a wf of an earlier
// version) may serve anything, so nothing is said not served while it is
// connected.
func TestNotServed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	unserved := func(types ...string) []string {
		got, err := b.store.UnservedTaskTypes(b.ctx, types)
		require.NoError(t, err)
		return got
	}
	require.Equal(t, []string{"a", "b", "c"}, unserved("a", "b", "c"), "no instance runs")
	whileRunning := func(types ...string) []string {
		got, err := b.store.UnservedWhileRunning(b.ctx, types)
		require.NoError(t, err)
		return got
	}
	require.Empty(t, whileRunning("a", "b", "c"), "nothing to warn about while no instance runs")

	one := b.serve(t, "one", "a", "b")
	two := b.serve(t, "two", "b")
	require.Equal(t, []string{"c"}, unserved("a", "b", "c"))
	require.Equal(t, []string{"c"}, whileRunning("a", "b", "c"))
	res, err := b.store.InsertTasks(b.ctx, []store.NewTask{newTask("a"), newTask("c")})
	require.NoError(t, err)
	reasons, err := b.store.WaitingReasons(b.ctx, []wftype.Task{res[0].Task, res[1].Task}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, store.WaitingNotServed, reasons[res[1].Task.ID])
	require.NotContains(t, reasons, res[0].Task.ID, "a is served: it only waits its turn")

	// A reload that drops a type gives its lock back.
	require.NoError(t, store.New(one).HoldServedTypes(b.ctx, nil, []string{"a"}))
	require.Equal(t, []string{"a", "c"}, unserved("a", "b", "c"))

	// A stopped instance serves nothing: its locks die with its session.
	require.NoError(t, two.Close(b.ctx))
	require.Equal(t, []string{"a", "c"}, unserved("a", "b", "c"), "one still serves b")
	require.NoError(t, one.Close(b.ctx))
	waitFor(t, "the stopped instances serve nothing", func() bool { return len(unserved("a", "b", "c")) == 3 })

	// An instance of an earlier wf: an election connection with no
	// served-types connection beside it. It may serve anything.
	old := b.connectAs(t, "wf-leader:wf:old")
	b.serve(t, "three", "a")
	require.Empty(t, unserved("a", "b", "c"))
	in, err := b.store.ServingInstances(b.ctx, "wf")
	require.NoError(t, err)
	require.Equal(t, []store.ServingInstance{{Name: "wf:old", Legacy: true}, {Name: "wf:three"}}, in)
	require.NoError(t, old.Close(b.ctx))
	waitFor(t, "the old instance's backend ended", func() bool { return len(unserved("a", "b", "c")) == 2 })
	// An instance with both connections is known.
	b.connectAs(t, "wf-leader:wf:three")
	require.Equal(t, []string{"b", "c"}, unserved("a", "b", "c"))
}

// waitFor polls cond until it holds: a closed connection's backend ends,
// and its locks go, a little after the client closes it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never %s", what)
		}
		time.Sleep(20 * time.Millisecond) // wall time: the server ends the backend on its own
	}
}
