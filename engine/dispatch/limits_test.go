package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// cluster is a set of dispatchers on one database, woken all at once.
type cluster struct {
	// instances is how many dispatchers run, each with its own pool.
	instances int
	// taskType is the one task type they run, under rule.
	taskType string
	rule     execution.Rule
	// fair, when set, is the dispatchers' fairness.
	fair *store.Fairness
	// tick is how often every instance is woken.
	tick time.Duration
	// woken, when set, is called after each round of wake-ups.
	woken func()
}

// startCluster starts c's dispatchers on one new database, running fn for
// c.taskType, and wakes them all at once every tick (as followers' poll
// timers do) so that their claims coincide. It returns a bundle on the
// database.
func startCluster(t *testing.T, c cluster, fn func(context.Context, *wftype.Task) (json.RawMessage, error)) *bundle {
	t.Helper()
	url := dbtest.NewDatabase(t)
	r := funcRunner{types: map[string]bool{c.taskType: true}, fn: fn}
	buses := make([]*signalbus.Bus, c.instances)
	for i := range c.instances {
		inst := &bundle{ctx: context.Background(), store: store.New(dbtest.PoolFor(t, url)), bus: signalbus.New()}
		buses[i] = inst.bus
		d := inst.dispatcher(t, fmt.Sprintf("w%d", i), r, func(cfg *dispatch.Config) {
			cfg.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: c.taskType}] = c.rule
			cfg.Fair = c.fair
		})
		t.Cleanup(runFor(d))
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		tick := time.NewTicker(c.tick)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				for _, bus := range buses {
					bus.Publish(signalbus.TaskQueued, c.taskType)
				}
				if c.woken != nil {
					c.woken()
				}
			}
		}
	}()
	return &bundle{ctx: context.Background(), store: store.New(dbtest.PoolFor(t, url)), bus: signalbus.New()}
}

// limitedCluster starts instances dispatchers, fair between tenants, all
// running task type "limited" under rule, woken every 5ms (startCluster).
func limitedCluster(t *testing.T, instances int, rule execution.Rule, fn func(context.Context, *wftype.Task) (json.RawMessage, error)) *bundle {
	t.Helper()
	return startCluster(t, cluster{instances: instances, taskType: "limited", rule: rule, fair: &store.Fairness{}, tick: 5 * time.Millisecond}, fn)
}

// enqueueTenants enqueues n tasks of "limited" for each tenant.
func enqueueTenants(t *testing.T, b *bundle, n int, tenants ...string) {
	t.Helper()
	var batch []store.NewTask
	for _, tn := range tenants {
		for i := range n {
			batch = append(batch, store.NewTask{SchemaName: tn, Scope: wftype.ScopeCatalog, ExecutionMode: wftype.ModeAsync,
				TaskType: "limited", Inputs: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		}
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
}

// TestPerTenantLimitAcrossInstances: four instances with plenty of slots
// share the backlogs of three tenants of a type capped at two ACTIVE tasks
// per tenant. The database, read over and over while they work, never
// shows a tenant with more than two ACTIVE tasks (nor do the handlers), every
// task completes, and each ran once: a task held back counted no attempt.
func TestPerTenantLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	const (
		perTenant = 2
		each      = 25
	)
	var mu sync.Mutex
	running, peak := map[string]int{}, 0
	b := limitedCluster(t, 4, execution.Rule{PerTenant: perTenant}, func(ctx context.Context, task *wftype.Task) (json.RawMessage, error) {
		mu.Lock()
		running[task.SchemaName]++
		peak = max(peak, running[task.SchemaName])
		mu.Unlock()
		time.Sleep(3 * time.Millisecond) // the run's work, so that claims overlap it
		mu.Lock()
		running[task.SchemaName]--
		mu.Unlock()
		return nil, nil
	})
	enqueueTenants(t, b, each, "ta", "tb", "tc")
	dbPeak := 0
	require.Eventually(t, func() bool {
		rows, err := b.store.DB().Query(b.ctx, `
SELECT coalesce(max(n), 0) FROM (
    SELECT count(*) AS n FROM tasks.tasks WHERE status = 'ACTIVE' GROUP BY schema_name
) x`)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var n int
			require.NoError(t, rows.Scan(&n))
			dbPeak = max(dbPeak, n)
		}
		require.NoError(t, rows.Err())
		return countStatus(t, b, wftype.StatusCompleted) == 3*each
	}, 120*time.Second, time.Millisecond)
	require.LessOrEqual(t, dbPeak, perTenant, "ACTIVE tasks of one tenant seen in the database")
	mu.Lock()
	require.LessOrEqual(t, peak, perTenant, "runs of one tenant at once")
	mu.Unlock()
	var maxAttempts int
	require.NoError(t, b.store.DB().QueryRow(b.ctx, `SELECT max(attempts) FROM tasks.tasks`).Scan(&maxAttempts))
	require.Equal(t, 1, maxAttempts, "a task held back counts no attempt")
	t.Logf("peak per tenant: database %d, handlers %d, cap %d", dbPeak, peak, perTenant)
}

// TestRateLimitAcrossInstances: four instances share the backlogs of three
// tenants of a type limited to 5 starts per tenant and 12 in all per second.
// Every task completes, and the attempt history in the database shows no
// window with more starts than the limits allow.
func TestRateLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	const each = 12
	b := limitedCluster(t, 4, execution.Rule{RatePerTenant: 5, RateStarts: 12, RateInterval: time.Second},
		func(context.Context, *wftype.Task) (json.RawMessage, error) { return nil, nil })
	enqueueTenants(t, b, each, "ta", "tb", "tc")
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == 3*each },
		120*time.Second, 10*time.Millisecond)

	// Starts per one-second window (the windows are aligned to whole
	// seconds), per tenant and in all, from every attempt's started_at.
	rows, err := b.store.DB().Query(b.ctx, `
SELECT t.schema_name, floor(extract(epoch FROM (a->>'started_at')::timestamptz))::bigint AS win, count(*)
FROM tasks.tasks t,
     jsonb_array_elements(tasks.attempt_history(t.attempt_log, t.attempts, t.owner_id, t.started_at, t.finished_at, t.status, t.error)) a
GROUP BY 1, 2`)
	require.NoError(t, err)
	defer rows.Close() // a failed check must not leave the connection out of the pool (its Close would wait)
	perWindow := map[int64]int{}
	starts := 0
	for rows.Next() {
		var tenant string
		var win int64
		var n int
		require.NoError(t, rows.Scan(&tenant, &win, &n))
		require.LessOrEqual(t, n, 5, "starts of %s in the window at %d", tenant, win)
		perWindow[win] += n
		starts += n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 3*each, starts, "every task started once")
	for win, n := range perWindow {
		require.LessOrEqual(t, n, 12, "starts in the window at %d", win)
	}
	t.Logf("starts per window: %v", perWindow)
}

// TestGlobalLimitAcrossInstances: six instances, each with its own pool and
// plenty of slots, share a backlog of a task type capped at three ACTIVE
// tasks across all instances. Every instance is woken at once, again and
// again (as followers' poll timers do), so that their claims coincide; no
// more than three tasks ever run at once, and every task completes.
func TestGlobalLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	const (
		instances = 6
		limit     = 3
		tasks     = 150
	)
	// round is closed, and replaced, after each round of wake-ups.
	var roundMu sync.Mutex
	round := make(chan struct{})
	var cur, peak atomic.Int32
	b := startCluster(t, cluster{instances: instances, taskType: "capped", rule: execution.Rule{Global: limit}, tick: time.Millisecond,
		woken: func() {
			roundMu.Lock()
			close(round)
			round = make(chan struct{})
			roundMu.Unlock()
		}}, func(context.Context, *wftype.Task) (json.RawMessage, error) {
		n := cur.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		// The task's work lasts until every instance has been woken again,
		// so that their claims overlap it.
		roundMu.Lock()
		next := round
		roundMu.Unlock()
		<-next
		cur.Add(-1)
		return nil, nil
	})
	enqueue(t, b, "capped", tasks, 0)
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == tasks }, 60*time.Second, 10*time.Millisecond)
	require.LessOrEqual(t, peak.Load(), int32(limit), "tasks of a globally capped type ran at once")
	t.Logf("peak: %d of %d", peak.Load(), limit)
}
