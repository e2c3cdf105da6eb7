// Package catalogtest runs a wf engine for the catalog's tests as `wf run`
// wires it for the catalog's handlers: the shipped specs given, the
// handlers of catalog/builtins bound to their dependencies, the event
// consumer and the dispatcher, until the test ends.
package catalogtest

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// StartEngine loads the spec files at paths, binds the catalog's handlers
// to deps (a quiet logger when it has none) and runs an engine on pool,
// with the event consumer, until the test ends. It returns the spec set.
func StartEngine(t testing.TB, pool *pgxpool.Pool, deps builtins.Deps, paths ...string) *spec.Set {
	t.Helper()
	set, err := spec.Load(spec.Options{Builtins: builtins.Names()}, paths...)
	require.NoError(t, err)
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	reg := builtin.NewRegistry()
	h, err := builtins.New(deps)
	require.NoError(t, err)
	require.NoError(t, h.Register(reg))
	rs, err := runnerset.Build(set, runnerset.Options{Registry: reg, DefaultVisibilityTimeout: time.Minute, Logger: deps.Logger})
	require.NoError(t, err)
	cons, err := events.NewConsumer(events.ConsumerConfig{Store: deps.Store, Client: client.New(deps.Store, set), Specs: set,
		Owner: "catalogtest", Interval: 100 * time.Millisecond, Logger: deps.Logger})
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{
		Name: "catalogtest", Owner: "catalogtest", Pool: pool, Runners: rs.Runners, Pairs: rs.Pairs, Rules: rs.Rules,
		PollInterval: 50 * time.Millisecond, Logger: deps.Logger,
		Services: []engine.Service{{Name: "event consumer", Run: func(ctx context.Context) error { cons.Run(ctx, nil); return nil }}},
	})
	require.NoError(t, err)
	inproc.Go(t, eng.Run)
	return set
}

// WaitEnded waits, a minute at the most, until n tasks of type taskType
// exist and have all ended, and returns them.
func WaitEnded(t testing.TB, st *store.Store, taskType string, n int) []wftype.Task {
	t.Helper()
	var tasks []wftype.Task
	require.Eventually(t, func() bool {
		var err error
		tasks, err = st.ListTasks(context.Background(), store.TaskFilter{TaskTypes: []string{taskType}})
		require.NoError(t, err)
		return len(tasks) == n && !slices.ContainsFunc(tasks, func(task wftype.Task) bool { return !task.Status.Terminal() })
	}, time.Minute, 20*time.Millisecond, "%d %s tasks end", n, taskType)
	return tasks
}
