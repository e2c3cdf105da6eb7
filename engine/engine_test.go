package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

type countingRunner struct {
	mu   sync.Mutex
	runs map[uuid.UUID]int
}

func newCountingRunner() *countingRunner { return &countingRunner{runs: map[uuid.UUID]int{}} }

func (r *countingRunner) Name() string  { return "counting" }
func (r *countingRunner) Priority() int { return 100 }
func (r *countingRunner) CanHandle(m wftype.ExecutionMode, tt string) bool {
	return m == wftype.ModeAsync && tt == "count"
}
func (r *countingRunner) Run(_ context.Context, t *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	r.mu.Lock()
	r.runs[t.ID]++
	r.mu.Unlock()
	return nil, nil
}

// warnLogger logs an engine's warnings and errors to the test's stderr.
func warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startEngine runs an engine of service "svc" as owner on pool until the
// test ends (or stop is called): r runs its "count" tasks, 20 at once, and
// it polls every 100ms; tweak, when given, changes that configuration first.
func startEngine(t *testing.T, pool *pgxpool.Pool, owner string, r runners.Runner, tweak ...func(*engine.Config)) (e *engine.Engine, stop context.CancelFunc) {
	t.Helper()
	cfg := engine.Config{
		Name: "svc", Owner: owner, Pool: pool, Runners: []runners.Runner{r},
		Pairs:        []runners.Pair{{Mode: wftype.ModeAsync, TaskType: "count"}},
		PollInterval: 100 * time.Millisecond, Slots: 20,
		Logger: warnLogger(),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	e, err := engine.New(cfg)
	require.NoError(t, err)
	return e, inproc.Go(t, e.Run)
}

// startEngines runs an engine (startEngine) as each of owners, all with r.
func startEngines(t *testing.T, pool *pgxpool.Pool, r runners.Runner, owners ...string) []*engine.Engine {
	t.Helper()
	engines := make([]*engine.Engine, len(owners))
	for i, owner := range owners {
		engines[i], _ = startEngine(t, pool, owner, r)
	}
	return engines
}

// startLedEngines is startEngines, then waits for one of the engines to lead.
func startLedEngines(t *testing.T, pool *pgxpool.Pool, r runners.Runner, owners ...string) []*engine.Engine {
	t.Helper()
	engines := startEngines(t, pool, r, owners...)
	require.Eventually(t, func() bool { return leaderOf(engines) != nil }, 20*time.Second, 10*time.Millisecond)
	return engines
}

// startFleet starts engines named owners on a fresh database, sharing one
// counting runner (startLedEngines: one of them leads).
func startFleet(t *testing.T, owners ...string) (*pgxpool.Pool, *store.Store, *countingRunner, []*engine.Engine) {
	t.Helper()
	pool := dbtest.NewPool(t)
	r := newCountingRunner()
	return pool, store.New(pool), r, startLedEngines(t, pool, r, owners...)
}

// leaderOf is the one engine of engines that leads, or nil when none or
// more than one does.
func leaderOf(engines []*engine.Engine) *engine.Engine {
	var l *engine.Engine
	n := 0
	for _, e := range engines {
		if e.IsLeader() {
			l = e
			n++
		}
	}
	if n != 1 {
		return nil
	}
	return l
}

func enqueueCount(t *testing.T, s *store.Store, n int) {
	t.Helper()
	batch := make([]store.NewTask, n)
	for i := range batch {
		batch[i] = store.NewTask{SchemaName: "system", Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync, TaskType: "count", MaxRetries: 3}
	}
	_, err := s.InsertTasks(context.Background(), batch)
	require.NoError(t, err)
}

func completed(t *testing.T, pool *pgxpool.Pool) int {
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM tasks.tasks WHERE status = 'COMPLETED'`).Scan(&n))
	return n
}

// TestLeaderFailoverKeepsTasksFlowing: three engines share a stream of
// tasks; the leader's backend is terminated mid-stream; another instance
// leads within about one poll interval and every task completes exactly once.
func TestLeaderFailoverKeepsTasksFlowing(t *testing.T) {
	t.Parallel()
	pool, st, r, engines := startFleet(t, "e0", "e1", "e2")
	enqueueCount(t, st, 500)
	old := leaderOf(engines)
	changed := old.LeaderChanged()
	_, err := pool.Exec(context.Background(),
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, "wf-leader:svc:"+old.Owner())
	require.NoError(t, err)
	<-changed
	killedAt := time.Now()
	require.Eventually(t, func() bool { l := leaderOf(engines); return l != nil && l != old }, 10*time.Second, 5*time.Millisecond)
	t.Logf("new leader after %v", time.Since(killedAt))
	enqueueCount(t, st, 500)
	require.Eventually(t, func() bool { return completed(t, pool) == 1000 }, 30*time.Second, 20*time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.runs, 1000)
	for id, n := range r.runs {
		require.Equal(t, 1, n, id)
	}
}

// TestJanitorRescuesDeadInstance: tasks ACTIVE on an instance that vanished
// (expired lease) are requeued and completed by a live one.
func TestJanitorRescuesDeadInstance(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	enqueueCount(t, st, 10)
	// A "dead" instance claims everything with a lease that is already over.
	claimed, err := st.ClaimTasks(context.Background(), store.ClaimParams{Owner: "dead", Total: 10,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "count", Max: 10, Lease: time.Millisecond}}})
	require.NoError(t, err)
	require.Len(t, claimed, 10)
	r := newCountingRunner()
	startEngine(t, pool, "alive", r)
	require.Eventually(t, func() bool { return completed(t, pool) == 10 }, 20*time.Second, 20*time.Millisecond)
	var retries int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT min(retry_count) FROM tasks.tasks`).Scan(&retries))
	require.Equal(t, 1, retries)
}

// databaseURL is the examples' database: a fresh migrated one.
func databaseURL() string {
	url, err := dbtest.Standalone()
	if err != nil {
		panic(err)
	}
	return url
}
