package store_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// setupTenants is setup with counts[i] noop tasks of priority 0 for
// tenant i of ta, tb, tc, td and te, enqueued in that order.
func setupTenants(t *testing.T, counts ...int) *bundle {
	t.Helper()
	b := setup(t)
	for i, n := range counts {
		tenantTasks(t, b, "t"+string(rune('a'+i)), "noop", n, 0)
	}
	return b
}

// tenantTasks enqueues n tasks of taskType for tenant (its catalog created
// when missing), of the given priority, in one insert: each later call's
// tasks are younger.
func tenantTasks(t *testing.T, b *bundle, tenant, taskType string, n, priority int) {
	t.Helper()
	if tenant != wftype.SystemSchema {
		if _, err := b.store.GetCatalog(b.ctx, tenant); err != nil {
			_, err := b.store.CreateCatalog(b.ctx, store.NewCatalog{ID: tenant, SchemaName: tenant})
			require.NoError(t, err)
		}
	}
	batch := make([]store.NewTask, n)
	for i := range batch {
		batch[i] = newTask(taskType)
		batch[i].SchemaName, batch[i].Scope, batch[i].Priority = tenant, wftype.ScopeCatalog, priority
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
}

// claimByTenant claims up to total tasks of noop and counts them by tenant.
func claimByTenant(t *testing.T, b *bundle, fair *store.Fairness, total int) map[string]int {
	t.Helper()
	tasks, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{
		Owner: "w", Total: total, Fair: fair,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: total, Lease: time.Minute}},
	})
	require.NoError(t, err)
	n := map[string]int{}
	for _, tk := range tasks {
		require.Equal(t, wftype.StatusActive, tk.Status)
		n[tk.SchemaName]++
	}
	return n
}

// TestClaimFair: with fairness, a batch is shared among the tenants with
// due tasks, by weight; a tenant with fewer tasks than its share leaves the
// rest to the others; without it, the oldest tasks go first whoever's.
func TestClaimFair(t *testing.T) {
	t.Parallel()
	t.Run("round-robin", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tenantTasks(t, b, "ta", "noop", 200, 0) // the flood, oldest
		for _, tn := range []string{"tb", "tc", "td", "te"} {
			tenantTasks(t, b, tn, "noop", 10, 0)
		}
		require.Equal(t, map[string]int{"ta": 4, "tb": 4, "tc": 4, "td": 4, "te": 4},
			claimByTenant(t, b, &store.Fairness{}, 20))
		require.Equal(t, map[string]int{"ta": 20}, claimByTenant(t, b, nil, 20), "unfair: oldest first")
		// tb..te have 6 left each: shares of 8 leave 2 each to ta.
		require.Equal(t, map[string]int{"ta": 16, "tb": 6, "tc": 6, "td": 6, "te": 6},
			claimByTenant(t, b, &store.Fairness{}, 40))
		require.Equal(t, map[string]int{"ta": 7}, claimByTenant(t, b, &store.Fairness{}, 7), "one tenant left")
	})
	t.Run("weights", func(t *testing.T) {
		t.Parallel()
		b := setupTenants(t, 100, 100, 100)
		require.Equal(t, map[string]int{"ta": 6, "tb": 12, "tc": 6},
			claimByTenant(t, b, &store.Fairness{Weights: map[string]float64{"tb": 2}}, 24))
	})
	t.Run("priority first", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tenantTasks(t, b, "ta", "noop", 50, 0)
		tenantTasks(t, b, "tb", "noop", 3, 5) // younger, but a higher priority
		tenantTasks(t, b, "tc", "noop", 50, 0)
		got := claimByTenant(t, b, &store.Fairness{}, 10)
		require.Equal(t, 3, got["tb"], "every task of the higher class is in the batch: %v", got)
		require.Equal(t, 10, got["ta"]+got["tb"]+got["tc"])
	})
	t.Run("paused tenant", func(t *testing.T) {
		t.Parallel()
		b := setupTenants(t, 30, 30)
		_, _, err := b.store.PauseQueue(b.ctx, store.PauseParams{Kind: store.PauseTenant, Name: "ta"})
		require.NoError(t, err)
		require.Equal(t, map[string]int{"tb": 10}, claimByTenant(t, b, &store.Fairness{}, 10))
	})
	t.Run("a higher priority beyond the tenants a batch serves", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tenantTasks(t, b, "ta", "noop", 1, 5)
		tenantTasks(t, b, "tb", "noop", 5, 0)
		tenantTasks(t, b, "tc", "noop", 5, 0)
		// One free slot: the batch serves one tenant's share, yet takes
		// ta's task of priority 5 before the others' of priority 0.
		require.Equal(t, map[string]int{"ta": 1}, claimByTenant(t, b, &store.Fairness{}, 1))
		tenantTasks(t, b, "ta", "noop", 1, 5)
		got := claimByTenant(t, b, &store.Fairness{}, 2)
		require.Equal(t, 1, got["ta"], "the priority-5 task first: %v", got)
		require.Equal(t, 1, got["tb"]+got["tc"], "then one task of priority 0: %v", got)
	})
	t.Run("not due", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		later := clock.Now().Add(time.Hour)
		batch := make([]store.NewTask, 20)
		for i := range batch {
			batch[i] = newTask("noop")
			batch[i].RunAfter = &later
		}
		_, err := b.store.InsertTasks(b.ctx, batch)
		require.NoError(t, err)
		tenantTasks(t, b, "tb", "noop", 5, 0)
		require.Equal(t, map[string]int{"tb": 5}, claimByTenant(t, b, &store.Fairness{}, 10))
	})
}

// TestClaimFairUsesIndexes: with 1M finished tasks in older partitions and
// 60 tenants with due tasks, the fair claim reads the partial indexes on
// PENDING rows only (the tenants by a loose scan of the tenant index) and
// never scans a partition sequentially.
func TestClaimFairUsesIndexes(t *testing.T) {
	b := setupFinished(t, 1000000)
	tenantTasks(t, b, "big", "noop", 2000, 0)
	for i := range 59 {
		tenantTasks(t, b, fmt.Sprintf("t%02d", i), "noop", 5, 0)
	}
	_, err := b.pool.Exec(b.ctx, `ANALYZE tasks.tasks`)
	require.NoError(t, err)
	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx) //nolint:errcheck
	plan := explainAnalyze(t, b, tx, store.ClaimFairSQL(),
		[]string{"ASYNCHRONOUS"}, []string{"noop"}, []int32{100}, []float64{60}, 100, nil, "w1",
		[]string{}, []float64{}, []string{""}, []int32{0})
	require.Contains(t, plan, "execution_mode_schema_name", "the tenant index")
	require.Contains(t, plan, "priority_run_after", "the claim index")
	require.Regexp(t, `^Update on tasks t .*rows=100 `, plan)
	requireNoFinishedScan(t, b, plan, "the claim")
}

// TestClaimFairIsNotCompiled: with a backlog of one tenant, as in a
// burn-down, the planner's estimate of the fair claim stays below
// jit_above_cost, so PostgreSQL does not JIT-compile every claim.
func TestClaimFairIsNotCompiled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "big", "noop", 20000, 0)
	_, err := b.pool.Exec(b.ctx, `ANALYZE tasks.tasks`)
	require.NoError(t, err)
	requireNotCompiled(t, b, b.pool, store.ClaimFairSQL(),
		[]string{"ASYNCHRONOUS"}, []string{"noop"}, []int32{100}, []float64{60}, 100, nil, "w1",
		[]string{}, []float64{}, []string{""}, []int32{0})
}

// requireNotCompiled fails when the planner's estimated cost of sql passes
// jit_above_cost: PostgreSQL would then JIT-compile it on every execution
// (0.5–1 s on a busy machine for a claim that runs in milliseconds; a fair
// claim whose estimates went wrong did). The cost is an estimate, so this
// checks the estimates of the claim's CTEs stay near their true sizes.
func requireNotCompiled(t *testing.T, b *bundle, q dbtest.Querier, sql string, args ...any) {
	t.Helper()
	var plans []struct {
		Plan struct {
			TotalCost float64 `json:"Total Cost"`
		} `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal([]byte(dbtest.Explain(t, b.ctx, q, "FORMAT JSON", sql, args...)), &plans))
	require.Len(t, plans, 1)
	var jitAbove float64
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT current_setting('jit_above_cost')::float8`).Scan(&jitAbove))
	require.Less(t, plans[0].Plan.TotalCost, jitAbove, "the claim's estimated cost (JIT compiles above jit_above_cost)")
}

// TestClaimFairOneTenant: a fair claim names the tenant when the pairs it
// took tasks of had PENDING tasks of that tenant only (a claim without
// fairness would have taken the same), and names none when it cannot tell: a batch of one
// stops looking after the first tenant, and a claim that took nothing saw
// nothing.
func TestClaimFairOneTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claim := func(taskType string, max int) store.Claimed {
		t.Helper()
		c, err := b.store.Claim(b.ctx, store.ClaimParams{
			Owner: "w", Total: max, Fair: &store.Fairness{},
			Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: taskType, Max: max, Lease: time.Minute}},
		})
		require.NoError(t, err)
		return c
	}
	c := claim("noop", 5)
	require.Empty(t, c.Tasks)
	require.Empty(t, c.OneTenant, "nothing claimed, nothing seen")

	tenantTasks(t, b, "ta", "noop", 20, 0)
	c = claim("noop", 5)
	require.Len(t, c.Tasks, 5)
	require.Equal(t, "ta", c.OneTenant)
	c = claim("noop", 1)
	require.Len(t, c.Tasks, 1)
	require.Empty(t, c.OneTenant, "a batch of one cannot tell")

	tenantTasks(t, b, "tb", "noop", 2, 0)
	c = claim("noop", 5)
	require.Len(t, c.Tasks, 5)
	require.Empty(t, c.OneTenant, "two tenants")
	// tb is drained; a tenant with tasks that are not due yet still counts.
	tenantTasks(t, b, "tc", "later", 1, 0)
	_, err := b.store.DB().Exec(b.ctx, `UPDATE tasks.tasks SET run_after = now() + interval '1 hour' WHERE task_type = 'later'`)
	require.NoError(t, err)
	tenantTasks(t, b, "ta", "later", 3, 0)
	c = claim("later", 5)
	require.Len(t, c.Tasks, 3)
	require.Empty(t, c.OneTenant, "tc waits for its time")
	c = claim("noop", 5)
	require.Len(t, c.Tasks, 5)
	require.Equal(t, "ta", c.OneTenant, "tb drained: ta alone again")
}

// TestClaimFairRotates: with more tenants waiting than a batch has room
// for, a claim that resumes where the last one's scan of the tenants ended
// (ClaimSlot.FairAfter = Claimed.ScanEnd) serves the next tenants: every
// one of 30 tenants gets a task within 10 claims of 3, and the scan wraps
// from the first tenant by name to the last. Claims that begin at the last
// tenant every time serve the same three. The same holds for a type with a
// per-tenant limit (the limited claim).
func TestClaimFairRotates(t *testing.T) {
	t.Parallel()
	for _, limits := range []map[string]store.TypeLimits{nil, {"noop": {PerTenant: 50}}} {
		t.Run(fmt.Sprintf("limited=%v", limits != nil), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			const tenants, batch = 30, 3
			for i := range tenants {
				tenantTasks(t, b, fmt.Sprintf("t%02d", i), "noop", 10, 0)
			}
			claimSkipping := func(after string, skip int) store.Claimed {
				t.Helper()
				c, err := b.store.Claim(b.ctx, store.ClaimParams{
					Owner: "w", Total: batch, Fair: &store.Fairness{}, Limits: limits,
					Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: batch, Lease: time.Minute,
						FairAfter: after, FairSkip: skip}},
				})
				require.NoError(t, err)
				require.Len(t, c.Tasks, batch)
				require.Empty(t, c.OneTenant)
				return c
			}
			claim := func(after string) store.Claimed { return claimSkipping(after, 0) }
			served := map[string]int{}
			after := ""
			for i := range tenants / batch {
				c := claim(after)
				got := map[string]bool{}
				for _, tk := range c.Tasks {
					got[tk.SchemaName] = true
					served[tk.SchemaName]++
				}
				// The scan goes down by name from the last tenant: t29, t28, t27, then t26…
				want := map[string]bool{}
				for k := range batch {
					want[fmt.Sprintf("t%02d", tenants-1-i*batch-k)] = true
				}
				require.Equal(t, want, got, "claim %d", i)
				after = c.ScanEnd[store.Pair{Mode: wftype.ModeAsync, TaskType: "noop"}]
				require.Equal(t, fmt.Sprintf("t%02d", tenants-(i+1)*batch), after, "claim %d", i)
			}
			require.Len(t, served, tenants, "every tenant served once in %d claims", tenants/batch)
			// After t00 the scan wraps to the last tenant.
			c := claim(after)
			for _, tk := range c.Tasks {
				require.Contains(t, []string{"t29", "t28", "t27"}, tk.SchemaName)
			}
			// Without resuming, the same three every time.
			for range 3 {
				for _, tk := range claim("").Tasks {
					require.Contains(t, []string{"t29", "t28", "t27"}, tk.SchemaName)
				}
			}
			// A tenant in the middle: the scan begins below it and wraps to include it last.
			c = claim("t10")
			got := map[string]bool{}
			for _, tk := range c.Tasks {
				got[tk.SchemaName] = true
			}
			require.Equal(t, map[string]bool{"t09": true, "t08": true, "t07": true}, got)

			// Passing over the tenants a claim still out serves (FairSkip):
			// the next three, and the scan ends after them; across the wrap too.
			for _, tc := range []struct {
				after string
				want  []string
			}{{"", []string{"t26", "t25", "t24"}}, {"t02", []string{"t28", "t27", "t26"}}} {
				c = claimSkipping(tc.after, batch)
				got = map[string]bool{}
				for _, tk := range c.Tasks {
					got[tk.SchemaName] = true
				}
				require.Len(t, got, batch, "after %q", tc.after)
				for _, tn := range tc.want {
					require.True(t, got[tn], "after %q: %s served (got %v)", tc.after, tn, got)
				}
				require.Equal(t, tc.want[batch-1], c.ScanEnd[store.Pair{Mode: wftype.ModeAsync, TaskType: "noop"}])
			}
		})
	}
}

// TestClaimFairSkipPastEveryTenant: a claim told to pass over more tenants
// than wait (FairSkip, another claim out serves them all) serves the
// tenants it found, as without: their next tasks, shared fairly, not only
// the unfair fill.
func TestClaimFairSkipPastEveryTenant(t *testing.T) {
	t.Parallel()
	b := setupTenants(t, 10, 10)
	c, err := b.store.Claim(b.ctx, store.ClaimParams{
		Owner: "w", Total: 4, Fair: &store.Fairness{},
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 4, Lease: time.Minute, FairSkip: 100}},
	})
	require.NoError(t, err)
	got := map[string]int{}
	for _, tk := range c.Tasks {
		got[tk.SchemaName]++
	}
	require.Equal(t, map[string]int{"ta": 2, "tb": 2}, got)
}

// TestClaimFairRotatesPastUnserved: the tenants a batch visits but leaves
// out (a claim of several pairs cut to its total; a heavier tenant taking
// more of the batch) come first in the next claim: every tenant is served
// in turn. And a claim whose pairs have one tenant each, but not the same
// one, does not count as one tenant.
func TestClaimFairRotatesPastUnserved(t *testing.T) {
	t.Parallel()
	rotate := func(t *testing.T, b *bundle, fair *store.Fairness, total int, types []string, claims int) map[string]int {
		t.Helper()
		after := map[string]string{}
		served := map[string]int{}
		for range claims {
			var slots []store.ClaimSlot
			for _, tt := range types {
				slots = append(slots, store.ClaimSlot{Mode: wftype.ModeAsync, TaskType: tt, Max: total, Lease: time.Minute, FairAfter: after[tt]})
			}
			c, err := b.store.Claim(b.ctx, store.ClaimParams{Owner: "w", Total: total, Fair: fair, Slots: slots})
			require.NoError(t, err)
			for _, tk := range c.Tasks {
				served[tk.SchemaName]++
			}
			for p, end := range c.ScanEnd {
				after[p.TaskType] = end
			}
		}
		return served
	}
	t.Run("two pairs, one tenant each", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tenantTasks(t, b, "ta", "noop", 10, 0)
		tenantTasks(t, b, "tb", "other", 10, 0)
		c, err := b.store.Claim(b.ctx, store.ClaimParams{Owner: "w", Total: 4, Fair: &store.Fairness{}, Slots: []store.ClaimSlot{
			{Mode: wftype.ModeAsync, TaskType: "noop", Max: 4, Lease: time.Minute},
			{Mode: wftype.ModeAsync, TaskType: "other", Max: 4, Lease: time.Minute},
		}})
		require.NoError(t, err)
		require.Len(t, c.Tasks, 4)
		require.Empty(t, c.OneTenant, "ta and tb")
	})
	t.Run("pairs cut to the total", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tenantTasks(t, b, "zz", "other", 200, 0) // older than the others
		for i := range 8 {
			tenantTasks(t, b, fmt.Sprintf("t%02d", i), "noop", 20, 0)
		}
		served := rotate(t, b, &store.Fairness{}, 4, []string{"noop", "other"}, 20)
		for i := range 8 {
			require.Positive(t, served[fmt.Sprintf("t%02d", i)], "t%02d in %v", i, served)
		}
	})
	t.Run("weights", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 6 {
			tenantTasks(t, b, fmt.Sprintf("t%02d", i), "noop", 40, 0)
		}
		served := rotate(t, b, &store.Fairness{Weights: map[string]float64{"t05": 3}}, 3, []string{"noop"}, 20)
		for i := range 6 {
			require.Positive(t, served[fmt.Sprintf("t%02d", i)], "t%02d in %v", i, served)
		}
	})
}

// TestClaimFairReportsTenantsLeftOut: a fair claim says, per pair, whether
// its batch left out tenants its scan visited after its scan end, with due
// tasks it had no room for (Claimed.LeftOut): a claim of two pairs cut to
// its total, with or without passing over another claim's window
// (FairSkip), of a type with limits too, and a heavier tenant taking more
// of a batch; not a batch that served every tenant it visited.
func TestClaimFairReportsTenantsLeftOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 12 {
		tenantTasks(t, b, fmt.Sprintf("t%02d", i), "noop", 5, 0)
		tenantTasks(t, b, fmt.Sprintf("t%02d", i), "other", 5, 0)
	}
	noop := store.Pair{Mode: wftype.ModeAsync, TaskType: "noop"}
	other := store.Pair{Mode: wftype.ModeAsync, TaskType: "other"}
	for _, tc := range []struct {
		name    string
		types   []string
		skip    int
		fair    store.Fairness
		limits  map[string]store.TypeLimits
		end     string
		leftOut map[store.Pair]bool
	}{
		{name: "one pair", types: []string{"noop"}, end: "t08"},
		{name: "two pairs cut to the total", types: []string{"noop", "other"}, end: "t10",
			leftOut: map[store.Pair]bool{noop: true, other: true}},
		{name: "past another claim's window", types: []string{"noop", "other"}, skip: 4, end: "t06",
			leftOut: map[store.Pair]bool{noop: true, other: true}},
		{name: "limited", types: []string{"noop", "other"}, limits: map[string]store.TypeLimits{"noop": {PerTenant: 50}},
			end: "t10", leftOut: map[store.Pair]bool{noop: true, other: true}},
		{name: "a heavier tenant", types: []string{"noop"}, fair: store.Fairness{Weights: map[string]float64{"t11": 3}},
			end: "t09", leftOut: map[store.Pair]bool{noop: true}},
	} {
		var c store.Claimed
		err := b.store.InTx(b.ctx, func(tx *store.Store) error {
			var slots []store.ClaimSlot
			for _, tt := range tc.types {
				slots = append(slots, store.ClaimSlot{Mode: wftype.ModeAsync, TaskType: tt, Max: 4, Lease: time.Minute, FairSkip: tc.skip})
			}
			var err error
			c, err = tx.Claim(b.ctx, store.ClaimParams{Owner: "w", Total: 4, Fair: &tc.fair, Limits: tc.limits, Slots: slots})
			require.NoError(t, err, tc.name)
			return errRolledBack
		})
		require.ErrorIs(t, err, errRolledBack)
		require.Len(t, c.Tasks, 4, tc.name)
		require.Equal(t, tc.end, c.ScanEnd[noop], tc.name)
		require.Equal(t, tc.leftOut, c.LeftOut, tc.name)
	}
}

// TestClaimFairLoneTenantTakesClaimOrder: with one tenant waiting in one
// pair (the burn-down's case), the fair claim skips its ranking
// (fairCandidates) and must take exactly the tasks, in the order, that a
// claim without fairness takes: highest priority, then oldest, whatever the
// batch's size next to the backlog, with mixed priorities (its shares then
// lock more than the batch), tasks not due yet, other pairs without tasks,
// a claim passing over the tenants of claims out at once, and a paused
// tenant. With the tenant's tasks in two pairs it ranks, and
// the batch still holds the same tasks.
func TestClaimFairLoneTenantTakesClaimOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenantTasks(t, b, "ta", "noop", 7, 0)
	tenantTasks(t, b, "ta", "noop", 3, 5)
	tenantTasks(t, b, "ta", "noop", 4, 0)
	tenantTasks(t, b, "ta", "noop", 2, 9)
	// Older due times than their creation order says, and one not due.
	_, err := b.pool.Exec(b.ctx, `
UPDATE tasks.tasks t SET run_after = now() - interval '1 minute' * x.k
FROM (SELECT task_id, row_number() OVER (ORDER BY task_id DESC) AS k FROM tasks.tasks
      ORDER BY task_id DESC LIMIT 5 OFFSET 3) x
WHERE t.task_id = x.task_id`)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE tasks.tasks SET run_after = now() + interval '1 hour'
WHERE task_id = (SELECT task_id FROM tasks.tasks WHERE priority = 5 ORDER BY task_id LIMIT 1)`)
	require.NoError(t, err)
	slots := func(types []string, max int) []store.ClaimSlot {
		var out []store.ClaimSlot
		for _, tt := range types {
			out = append(out, store.ClaimSlot{Mode: wftype.ModeAsync, TaskType: tt, Max: max, Lease: time.Minute})
		}
		return out
	}
	// claimed claims in a transaction it rolls back and returns the ids.
	claimedOf := func(fair *store.Fairness, sl []store.ClaimSlot, total int) ([]string, store.Claimed) {
		t.Helper()
		var ids []string
		var c store.Claimed
		err := b.store.InTx(b.ctx, func(tx *store.Store) error {
			var err error
			c, err = tx.Claim(b.ctx, store.ClaimParams{Owner: "w", Total: total, Fair: fair, Slots: sl})
			require.NoError(t, err)
			for _, tk := range c.Tasks {
				ids = append(ids, tk.ID.String())
			}
			return errRolledBack
		})
		require.ErrorIs(t, err, errRolledBack)
		return ids, c
	}
	claimed := func(fair *store.Fairness, types []string, max, total int) ([]string, store.Claimed) {
		t.Helper()
		return claimedOf(fair, slots(types, max), total)
	}
	for _, types := range [][]string{{"noop"}, {"noop", "empty", "other"}} {
		for _, n := range []struct{ max, total int }{{2, 2}, {3, 3}, {5, 5}, {6, 4}, {12, 12}, {40, 40}} {
			name := fmt.Sprintf("types=%d,max=%d,total=%d", len(types), n.max, n.total)
			want, _ := claimed(nil, types, n.max, n.total)
			got, c := claimed(&store.Fairness{}, types, n.max, n.total)
			require.Equal(t, want, got, name)
			require.Equal(t, "ta", c.OneTenant, name)
			require.Equal(t, "ta", c.ScanEnd[store.Pair{Mode: wftype.ModeAsync, TaskType: "noop"}], name)
			require.Empty(t, c.LeftOut, name)
		}
	}
	// A claim that passes over the tenants of claims out at once
	// (FairSkip) still serves the one tenant, in claim order.
	for _, skip := range []int{1, 5} {
		want, _ := claimed(nil, []string{"noop"}, 6, 6)
		sl := slots([]string{"noop"}, 6)
		sl[0].FairSkip = skip
		got, _ := claimedOf(&store.Fairness{}, sl, 6)
		require.Equal(t, want, got, "skip %d", skip)
	}
	all, _ := claimed(nil, []string{"noop"}, 40, 40)
	require.Len(t, all, 15, "one task is not due")

	// The same tenant in a second pair: ranked, the same tasks.
	tenantTasks(t, b, "ta", "other", 3, 9)
	for _, total := range []int{4, 30} {
		want, _ := claimed(nil, []string{"noop", "other"}, 20, total)
		got, c := claimed(&store.Fairness{}, []string{"noop", "other"}, 20, total)
		require.ElementsMatch(t, want, got, total)
		require.Equal(t, "ta", c.OneTenant)
	}

	// A paused tenant: nothing.
	_, _, err = b.store.PauseQueue(b.ctx, store.PauseParams{Kind: store.PauseTenant, Name: "ta"})
	require.NoError(t, err)
	got, c := claimed(&store.Fairness{}, []string{"noop"}, 5, 5)
	require.Empty(t, got)
	require.Empty(t, c.OneTenant)
}

var errRolledBack = fmt.Errorf("rolled back")

// rotateFair makes claims fair claims of batch tasks of noop in a row, each
// resuming where the last one's scan ended (Claimed.ScanEnd, as the
// dispatcher's census does), and counts the tasks served by tenant.
func rotateFair(t *testing.T, b *bundle, fair *store.Fairness, limits map[string]store.TypeLimits, batch, claims int) map[string]int {
	t.Helper()
	noop := store.Pair{Mode: wftype.ModeAsync, TaskType: "noop"}
	served := map[string]int{}
	after := ""
	for i := range claims {
		c, err := b.store.Claim(b.ctx, store.ClaimParams{
			Owner: "w", Total: batch, Fair: fair, Limits: limits,
			Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: batch, Lease: time.Minute, FairAfter: after}},
		})
		require.NoError(t, err)
		require.Len(t, c.Tasks, batch, "claim %d", i)
		for _, tk := range c.Tasks {
			served[tk.SchemaName]++
		}
		after = c.ScanEnd[noop]
	}
	return served
}

// TestClaimFairLightTenantKeepsItsTurn: with more tenants waiting than a
// batch has room for, a tenant of weight below 1 (its first task's turn
// 1 ÷ w comes after the others' first) is left out of a batch whose room the
// tenants visited with it fill; the next claim must resume at it, not past
// the tenants served after it, so it is served on its turn, claim after
// claim: never zero, whatever the tenants' count next to the batch, beside
// heavier tenants too (their first tasks fill the batch before its turn).
// Every other tenant is served too, and a heavier one at least as much as
// one of weight 1.
func TestClaimFairLightTenantKeepsItsTurn(t *testing.T) {
	t.Parallel()
	const batch = 3
	for _, tc := range []struct {
		name    string
		tenants int
		weights map[string]float64
	}{
		{name: "9 tenants", tenants: 9, weights: map[string]float64{"t04": 0.5}},
		{name: "12 tenants", tenants: 12, weights: map[string]float64{"t04": 0.5}},
		{name: "beside heavier tenants", tenants: 9, weights: map[string]float64{"t04": 0.5, "t03": 2, "t05": 2}},
		{name: "a quarter beside three", tenants: 10, weights: map[string]float64{"t04": 0.25, "t05": 3}},
	} {
		for _, limits := range []map[string]store.TypeLimits{nil, {"noop": {PerTenant: 50}}} {
			t.Run(fmt.Sprintf("%s/limited=%v", tc.name, limits != nil), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				claims := 20 * tc.tenants / batch // 20 turns of every tenant
				for i := range tc.tenants {
					tenantTasks(t, b, fmt.Sprintf("t%02d", i), "noop", 3*claims, 0)
				}
				served := rotateFair(t, b, &store.Fairness{Weights: tc.weights}, limits, batch, claims)
				plain, n := 0, 0
				for i := range tc.tenants {
					tn := fmt.Sprintf("t%02d", i)
					require.Positive(t, served[tn], "%s never served: %v", tn, served)
					if _, ok := tc.weights[tn]; !ok {
						plain += served[tn]
						n++
					}
				}
				for tn, w := range tc.weights {
					if w > 1 {
						require.GreaterOrEqual(t, served[tn]*n, plain, "%s (weight %v) below a tenant of weight 1: %v", tn, w, served)
					} else {
						// At least about its weight's share of a tenant of weight 1.
						require.GreaterOrEqual(t, float64(served[tn]*n), 0.8*w*float64(plain), "%s (weight %v): %v", tn, w, served)
					}
				}
				t.Logf("served: %v", served)
			})
		}
	}
}

// TestClaimFairResumesAtTheFirstTenantLeftOut: a batch that leaves out a
// tenant its scan visited while it serves tenants visited after it (a
// lighter tenant's later turn; a tenant whose tasks of a higher priority go
// first) ends its scan before that tenant (Claimed.ScanEnd, LeftOut), so
// the next claim serves it first.
func TestClaimFairResumesAtTheFirstTenantLeftOut(t *testing.T) {
	t.Parallel()
	noop := store.Pair{Mode: wftype.ModeAsync, TaskType: "noop"}
	for _, tc := range []struct {
		name    string
		weights map[string]float64
		high    int // tasks of priority 5 of t06
	}{
		{name: "lighter tenant", weights: map[string]float64{"t07": 0.5}},
		{name: "higher priority after it", high: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for i := range 9 {
				tenantTasks(t, b, fmt.Sprintf("t%02d", i), "noop", 5, 0)
			}
			tenantTasks(t, b, "t06", "noop", tc.high, 5)
			claim := func(after string) (store.Claimed, map[string]int) {
				t.Helper()
				c, err := b.store.Claim(b.ctx, store.ClaimParams{
					Owner: "w", Total: 3, Fair: &store.Fairness{Weights: tc.weights},
					Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 3, Lease: time.Minute, FairAfter: after}},
				})
				require.NoError(t, err)
				got := map[string]int{}
				for _, tk := range c.Tasks {
					got[tk.SchemaName]++
				}
				return c, got
			}
			// The scan visits t08, t07, t06: t07 is left out, t06 served.
			c, got := claim("")
			require.Zero(t, got["t07"], "%v", got)
			require.Positive(t, got["t06"], "%v", got)
			require.Equal(t, "t08", c.ScanEnd[noop])
			require.True(t, c.LeftOut[noop])
			_, got = claim(c.ScanEnd[noop])
			require.Positive(t, got["t07"], "%v", got)
		})
	}
}
