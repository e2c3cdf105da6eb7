package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// TestReload: Reload swaps in a new spec set while the engine runs. A task
// that runs when its type is dropped finishes under the definition it
// started with; the dropped type can no longer be enqueued, the new one
// can and runs; the served task types follow. A set that does not build
// (a lease shorter than two heartbeats) changes nothing.
func TestReload(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	started, release := make(chan struct{}, 1), make(chan struct{})
	reg := builtin.NewRegistry()
	require.NoError(t, reg.Register("gate", func(ctx context.Context, _ *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		started <- struct{}{}
		select {
		case <-release:
			return json.RawMessage(`{"by":"gate"}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	compile := func(yaml string) *spec.Set {
		set, err := spec.Compile([]spec.Source{{Name: "specs.yaml", Data: []byte(yaml)}}, spec.Options{Builtins: reg.Names()})
		require.NoError(t, err)
		return set
	}
	e, err := engine.New(engine.Config{
		Name: "svc", Pool: pool, Registry: reg, Specs: compile("kind: TaskType\nname: slow\nhandler: {builtin: gate}\n"),
		PollInterval: 100 * time.Millisecond, Logger: warnLogger(),
	})
	require.NoError(t, err)
	inproc.Go(t, e.Run)
	served := func(types ...string) bool {
		unserved, err := st.UnservedTaskTypes(t.Context(), types)
		require.NoError(t, err)
		return len(unserved) == 0
	}
	require.Eventually(t, func() bool { return served("slow") }, 30*time.Second, 20*time.Millisecond)

	slow, err := e.Client().Enqueue(t.Context(), client.Request{TaskType: "slow"})
	require.NoError(t, err)
	<-started

	res, err := e.Reload(t.Context(), compile("kind: TaskType\nname: fresh\nhandler: {builtin: noop}\n"))
	require.NoError(t, err)
	require.Equal(t, engine.ReloadResult{TaskTypes: []string{"fresh"}, Added: []string{"fresh"}, Removed: []string{"slow"}}, res)
	_, err = e.Client().Enqueue(t.Context(), client.Request{TaskType: "slow"})
	require.ErrorContains(t, err, "slow", "a dropped type is refused")
	require.Eventually(t, func() bool { return served("fresh") && !served("slow") }, 30*time.Second, 20*time.Millisecond)

	close(release)
	require.JSONEq(t, `{"by":"gate"}`, string(waitDone(t, st, slow.Task.ID).Outputs), "the running task ends under its old definition")
	fresh, err := e.Client().Enqueue(t.Context(), client.Request{TaskType: "fresh"})
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCompleted, waitDone(t, st, fresh.Task.ID).Status)

	_, err = e.Reload(t.Context(), compile("kind: TaskType\nname: brief\nhandler: {builtin: noop}\nvisibility_timeout: 10s\n"))
	require.ErrorContains(t, err, "task type brief has a visibility timeout of 10s")
	_, kept := e.Specs().TaskType("fresh")
	require.True(t, kept, "the old set stays")
	_, err = e.Client().Enqueue(t.Context(), client.Request{TaskType: "brief"})
	require.Error(t, err, "the refused set's type is unknown")
}

// waitDone waits until task id is terminal and returns it.
func waitDone(t *testing.T, st *store.Store, id uuid.UUID) wftype.Task {
	t.Helper()
	var task wftype.Task
	require.Eventually(t, func() bool {
		var err error
		task, err = st.GetTask(t.Context(), id)
		require.NoError(t, err)
		return task.Status.Terminal()
	}, 60*time.Second, 20*time.Millisecond)
	return task
}
