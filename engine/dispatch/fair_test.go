package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestFairAgainWhenAnotherTenantQueues: a dispatcher whose fair claim found
// one tenant claims without fairness for a while (census.go), but a task
// that another tenant queues, through its signal, makes the very next claim
// fair. Tenant ta's tasks hold their slot until the test lets them end,
// tb's end at once; the clock is frozen, so the census never ages. After
// ta's flood has taken every slot twice, tb queues four tasks and the slots
// free: a claim without fairness would fill them all with ta's tasks, which
// would hold them, and tb's tasks would never start.
func TestFairAgainWhenAnotherTenantQueues(t *testing.T) {
	t.Parallel()
	const slots = 8
	b := setup(t)
	fake := clock.NewFake(clock.Now().UTC().Add(time.Minute))
	release := make(chan struct{}) // each send lets one of ta's runs end
	started := make(chan string, 1000)
	r := funcRunner{types: map[string]bool{"fair": true}, fn: func(ctx context.Context, tk *wftype.Task) (json.RawMessage, error) {
		started <- tk.SchemaName
		if tk.SchemaName == "ta" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return nil, nil
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Clock, c.Slots, c.ClaimAhead, c.Fair = fake, slots, -1, &store.Fairness{}
		c.ClaimCoalesce = 2 * time.Second // freed slots gather into claims of two or more
	})
	stop := runFor(d)
	defer stop()
	defer close(release) // before stop: ta's last runs end
	queue := func(tenant string, n int) {
		batch := make([]store.NewTask, n)
		for i := range batch {
			batch[i] = store.NewTask{SchemaName: tenant, Scope: wftype.ScopeCatalog, ExecutionMode: wftype.ModeAsync,
				TaskType: "fair", Inputs: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		}
		_, err := b.store.InsertTasks(b.ctx, batch)
		require.NoError(t, err)
		b.bus.Publish(signalbus.TaskQueued, store.QueuedPayload("fair", tenant)) // as the insert's NOTIFY says
	}
	expect := func(n int) map[string]int {
		seen := map[string]int{}
		deadline := time.After(60 * time.Second)
		for range n {
			select {
			case tn := <-started:
				seen[tn]++
			case <-deadline:
				t.Fatalf("%d of %d runs started: %v", len(seen), n, seen)
			}
		}
		return seen
	}

	queue("ta", 100)
	require.Equal(t, map[string]int{"ta": slots}, expect(slots))
	for range slots {
		release <- struct{}{}
	}
	require.Equal(t, map[string]int{"ta": slots}, expect(slots), "one tenant: its tasks take the freed slots")

	queue("tb", 4)
	for range slots {
		release <- struct{}{}
	}
	seen := map[string]int{}
	for seen["tb"] < 4 {
		for tn, n := range expect(1) {
			seen[tn] += n
		}
	}
	require.Less(t, seen["ta"], slots, "ta's tasks took every slot before tb's started: %v", seen)
}

// TestFairForPairTheCensusDidNotScan: the census's finding of one tenant
// holds for the (task type, mode) pairs its fair claim scanned, not for a
// pair that had no free slot then. Tenant ta floods "flood" (quick runs)
// and has an older backlog of "capped" (concurrency.per_instance 1); tb
// has three capped tasks. While capped's one slot is taken, the fair
// claims cover flood only and find ta alone, so the claims of flood after
// them skip fairness; the claim that takes capped's freed slot must still
// be fair, and the capped runs alternate between the tenants until tb's
// are done (a plain claim would take ta's older tasks first).
func TestFairForPairTheCensusDidNotScan(t *testing.T) {
	t.Parallel()
	const slots = 8
	b := setup(t)
	fake := clock.NewFake(clock.Now().UTC().Add(time.Minute)) // frozen: the census never ages
	release := make(chan struct{})                            // each send lets one capped run end
	capped := make(chan string, 100)
	var floods atomic.Int64
	r := funcRunner{types: map[string]bool{"flood": true, "capped": true}, fn: func(ctx context.Context, tk *wftype.Task) (json.RawMessage, error) {
		if tk.TaskType == "flood" {
			floods.Add(1)
			return nil, nil
		}
		capped <- tk.SchemaName
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	}}
	queue := func(tenant, taskType string, n int) {
		batch := make([]store.NewTask, n)
		for i := range batch {
			batch[i] = store.NewTask{SchemaName: tenant, Scope: wftype.ScopeCatalog, ExecutionMode: wftype.ModeAsync,
				TaskType: taskType, Inputs: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		}
		_, err := b.store.InsertTasks(b.ctx, batch)
		require.NoError(t, err)
	}
	queue("ta", "capped", 10)
	queue("tb", "capped", 3)
	queue("ta", "flood", 50000)
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Clock, c.Slots, c.ClaimAhead, c.Fair = fake, slots, -1, &store.Fairness{}
		c.Rules = execution.Rules{{Mode: wftype.ModeAsync, TaskType: "capped"}: {PerInstance: 1}}
	})
	stop := runFor(d)
	defer stop()
	defer close(release) // before stop: the last capped run ends
	var order []string
	for range 6 {
		select {
		case tn := <-capped:
			order = append(order, tn)
		case <-time.After(60 * time.Second):
			t.Fatalf("capped runs so far: %v", order)
		}
		// Let claims of flood alone run until one has recorded its finding:
		// at most slots-1 of the flood runs that start from now were
		// claimed before this capped run, so 2×slots more come from later
		// claims, each of which ended (and recorded) before its runs began.
		mark := floods.Load()
		require.Eventually(t, func() bool { return floods.Load() >= mark+2*slots }, 60*time.Second, time.Millisecond,
			"flood runs after capped run %d", len(order))
		release <- struct{}{}
	}
	require.Equal(t, []string{"tb", "ta", "tb", "ta", "tb", "ta"}, order,
		"each claim of capped's freed slot is fair: the tenants take turns")
}

// TestFairRoundRobinAcrossClaims: with more tenants waiting than there are
// slots, each claim resumes the scan of the tenants where the last one's
// ended, so the tenants take turns: no tenant's second task is claimed
// before every tenant's first has been (claims beginning at the last tenant
// by name every time would run its whole backlog first).
func TestFairRoundRobinAcrossClaims(t *testing.T) {
	t.Parallel()
	requireRoundRobin(t, 40, 5, 4)
}

// TestFairRoundRobinAcrossParallelClaims: as TestFairRoundRobinAcrossClaims,
// with claims of 200 tasks or more, two at a time (Config.ClaimWorkers) once
// a backlog waits: the claim that begins while another is out takes the
// tenants after those the other serves, rather than the same ones again
// (their second tasks, while tenants further on wait for their first).
func TestFairRoundRobinAcrossParallelClaims(t *testing.T) {
	t.Parallel()
	requireRoundRobin(t, 1500, 2, 400)
}

// requireRoundRobin queues each tasks for each of tenants tenants, runs
// them on a fair dispatcher of slots slots (two claims at once when it has
// room for them) and checks that every tenant's first task was claimed
// before any tenant's second. Claims are told apart by started_at, which
// one claim writes alike into all its tasks; the order in which runs reach
// the runner is not used, since the runs of one claim start concurrently
// and a claim that wraps past the first tenant by name holds first and
// second tasks at once. Two claims out at once have no order (either may
// take its time first), so a second task claimed by the claim just before
// the one of the last first task, in started_at order, may be that claim's
// partner: only earlier ones count.
func requireRoundRobin(t *testing.T, tenants, each, slots int) {
	t.Helper()
	b := setup(t)
	var batch []store.NewTask
	for i := range tenants {
		for k := range each {
			batch = append(batch, store.NewTask{SchemaName: fmt.Sprintf("t%04d", i), Scope: wftype.ScopeCatalog,
				ExecutionMode: wftype.ModeAsync, TaskType: "fair", Inputs: json.RawMessage(fmt.Sprintf(`{"k":%d}`, k))})
		}
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	type start struct {
		tenant  string
		claimed time.Time
	}
	started := make(chan start, tenants*each)
	r := funcRunner{types: map[string]bool{"fair": true}, fn: func(_ context.Context, tk *wftype.Task) (json.RawMessage, error) {
		started <- start{tk.SchemaName, *tk.StartedAt}
		return nil, nil
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.Slots, c.ClaimAhead, c.ClaimWorkers, c.Fair = slots, -1, 2, &store.Fairness{}
	})
	stop := runFor(d)
	defer stop()
	b.bus.Publish(signalbus.TaskQueued, "fair")
	claims := map[string][]time.Time{} // per tenant, its tasks' claim times
	deadline := time.After(180 * time.Second)
	for n := 0; n < tenants*each; n++ {
		select {
		case s := <-started:
			claims[s.tenant] = append(claims[s.tenant], s.claimed)
		case <-deadline:
			t.Fatalf("%d of %d tasks started", n, tenants*each)
		}
	}
	require.Len(t, claims, tenants)
	var lastFirst time.Time // when the last tenant to be served got its first task
	var all []time.Time     // every claim's time
	for _, times := range claims {
		slices.SortFunc(times, time.Time.Compare)
		if times[0].After(lastFirst) {
			lastFirst = times[0]
		}
		all = append(all, times...)
	}
	slices.SortFunc(all, time.Time.Compare)
	all = slices.Compact(all)
	bound := lastFirst // seconds claimed before it are early
	if i := slices.Index(all, lastFirst); i > 0 {
		bound = all[i-1]
	}
	early := 0
	for tn, times := range claims {
		require.Len(t, times, each, tn)
		if times[1].Before(bound) {
			early++
		}
	}
	require.Zero(t, early, "%d tenants' second tasks were claimed before the last tenant's first (at %s, claim %d of %d)",
		early, lastFirst, slices.Index(all, lastFirst)+1, len(all))
}
