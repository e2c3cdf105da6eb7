package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestClaimGlobalCap: a capped type's claims stop at its cap minus its
// ACTIVE tasks, whatever the slots, its two execution modes share the cap,
// uncapped types in the same claim are not held back, and Room says how
// much room the claim found.
func TestClaimGlobalCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var batch []store.NewTask
	for range 6 {
		batch = append(batch, newTask("capped"))
		st := newTask("capped")
		st.ExecutionMode = wftype.ModeSync
		batch = append(batch, st, newTask("free"))
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	claim := func(owner string) store.Claimed {
		t.Helper()
		c, err := b.store.Claim(b.ctx, store.ClaimParams{
			Owner: owner, Total: 100, Global: map[string]int{"capped": 4},
			Slots: []store.ClaimSlot{
				{Mode: wftype.ModeAsync, TaskType: "capped", Max: 10, Lease: time.Minute},
				{Mode: wftype.ModeSync, TaskType: "capped", Max: 10, Lease: time.Minute},
				{Mode: wftype.ModeAsync, TaskType: "free", Max: 2, Lease: time.Minute},
			},
		})
		require.NoError(t, err)
		return c
	}
	perType := func(tasks []wftype.Task) map[string]int {
		n := map[string]int{}
		for _, tk := range tasks {
			require.Equal(t, wftype.StatusActive, tk.Status)
			n[tk.TaskType]++
		}
		return n
	}

	first := claim("w1")
	require.Equal(t, map[string]int{"capped": 4, "free": 2}, perType(first.Tasks))
	require.Equal(t, map[string]int{"capped": 4}, first.Room)

	second := claim("w2")
	require.Equal(t, map[string]int{"free": 2}, perType(second.Tasks), "the cap is full")
	require.Empty(t, second.Room)

	var ids []uuid.UUID
	for _, tk := range first.Tasks {
		if tk.TaskType == "capped" && len(ids) < 3 {
			ids = append(ids, tk.ID)
		}
	}
	_, err = b.store.ReleaseTasks(b.ctx, "w1", ids)
	require.NoError(t, err)
	third := claim("w3")
	require.Equal(t, map[string]int{"capped": 3, "free": 2}, perType(third.Tasks))
	require.Equal(t, map[string]int{"capped": 3}, third.Room)

	// Without a cap, the same slots take every due task of the type.
	got, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w4", Total: 100,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "capped", Max: 10, Lease: time.Minute}}})
	require.NoError(t, err)
	require.NotEmpty(t, got)
}

// TestClaimGlobalCapRacing: in rounds, claimers on connections of their
// own claim overlapping sets of capped types all at once; the claims of a
// round never take more of a type than its cap, the claimers never deadlock
// on each other's locks, and between rounds the claimed tasks complete.
func TestClaimGlobalCapRacing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	types := []string{"a", "b", "c"}
	caps := map[string]int{"a": 2, "b": 3, "c": 5}
	var batch []store.NewTask
	for _, tt := range types {
		for range 40 {
			batch = append(batch, newTask(tt))
		}
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)

	// Each claimer claims two of the three types, in an order of its own.
	const claimers = 8
	stores := make([]*store.Store, claimers)
	params := make([]store.ClaimParams, claimers)
	for w := range claimers {
		stores[w] = store.New(dbtest.PoolFor(t, b.pool.Config().ConnString()))
		mine := []string{types[w%3], types[(w+1)%3]}
		if w%2 == 1 {
			mine[0], mine[1] = mine[1], mine[0]
		}
		params[w] = store.ClaimParams{Owner: fmt.Sprintf("w%d", w), Total: 20, Global: caps}
		for _, tt := range mine {
			params[w].Slots = append(params[w].Slots, store.ClaimSlot{Mode: wftype.ModeAsync, TaskType: tt, Max: 10, Lease: time.Minute})
		}
		// A first claim prepares the statements, so the rounds' claims
		// start together.
		_, err := stores[w].Claim(b.ctx, store.ClaimParams{Owner: "none", Total: 1, Global: caps,
			Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "nothing", Max: 1, Lease: time.Minute}}})
		require.NoError(t, err)
	}
	finished := 0
	for round := 0; finished < len(batch); round++ {
		require.Less(t, round, 100, "the claims stopped making progress")
		claimed := make([][]wftype.Task, claimers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				c, err := stores[w].Claim(b.ctx, params[w])
				if err != nil {
					t.Error(err)
				}
				claimed[w] = c.Tasks
			}()
		}
		close(start)
		wg.Wait()
		require.False(t, t.Failed())
		perType := map[string]int{}
		for w, tasks := range claimed {
			if len(tasks) == 0 {
				continue
			}
			outcomes := make([]store.Finish, len(tasks))
			for i, tk := range tasks {
				perType[tk.TaskType]++
				outcomes[i] = store.Finish{ID: tk.ID, Status: wftype.StatusCompleted}
			}
			_, err := b.store.FinishTasks(b.ctx, store.FinishParams{Owner: params[w].Owner}, outcomes)
			require.NoError(t, err)
			finished += len(tasks)
		}
		for _, tt := range types {
			require.LessOrEqual(t, perType[tt], caps[tt], "round %d, type %s", round, tt)
		}
	}
}

// TestClaimCappedUsesIndexes: with finished tasks in older partitions, the
// capped claim reads PENDING rows through the claim index and counts ACTIVE
// ones through the lease index, never scanning a partition sequentially.
func TestClaimCappedUsesIndexes(t *testing.T) {
	b := setupFinished(t, 200000)
	batch := make([]store.NewTask, 50)
	for i := range batch {
		batch[i] = newTask("noop")
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	require.Len(t, claimAll(t, b, "noop", 5), 5)
	_, err = b.pool.Exec(b.ctx, `ANALYZE tasks.tasks`)
	require.NoError(t, err)

	tx, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx) //nolint:errcheck
	lock, claim := store.ClaimCappedSQL()
	_, err = tx.Exec(b.ctx, lock, []string{"noop"})
	require.NoError(t, err)
	plan := explainAnalyze(t, b, tx, claim,
		[]string{"ASYNCHRONOUS"}, []string{"noop"}, []int32{100}, []float64{60}, 100, nil, "w1",
		[]string{"noop"}, []int32{8})
	require.Contains(t, plan, "priority_run_after")
	require.Contains(t, plan, "locked_until_idx on")
	require.Contains(t, plan, "rows=3 ", "a cap of 8 with 5 ACTIVE leaves room for 3")
	requireNoFinishedScan(t, b, plan, "the claim")
}
