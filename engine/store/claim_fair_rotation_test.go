package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// rotationTenants are the 30 tenants of the rotation tests, t00…t29.
func rotationTenants() []string {
	names := make([]string, 30)
	for i := range names {
		names[i] = fmt.Sprintf("t%02d", i)
	}
	return names
}

// TestClaimFairRotates: when more tenants have due tasks than a claim batch
// has room for, successive fair claims go round the tenants instead of
// serving the same ones again. With 30 tenants of weight 1 and batches of
// b = 1, 2, 3 tasks, each claim serves b tenants not served since the
// rotation last passed them, so every tenant is served at least once in
// every ceil(30/b) consecutive claims (the bound asserted here).
func TestClaimFairRotates(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for _, tn := range rotationTenants() {
				tenantTasks(t, b, tn, "noop", 12, 0)
			}
			bound := (30 + batch - 1) / batch
			last := map[string]int{} // the claim that last served each tenant
			for i := range 3 * bound {
				got := claimByTenant(t, b, &store.Fairness{}, batch)
				require.Len(t, got, batch, "claim %d serves %d tenants: %v", i, batch, got)
				for tn := range got {
					last[tn] = i
				}
				for _, tn := range rotationTenants() {
					prev, ok := last[tn]
					if !ok {
						prev = -1
					}
					require.Less(t, i-prev, bound, "claim %d: %s not served since claim %d", i, tn, prev)
				}
			}
		})
	}
}

// TestClaimFairRotationWeights: with the rotation, weights hold over many
// claims as well as inside one batch: in four turns of the rotation (132
// tasks, the weights summing to 33) a tenant of weight 3 gets exactly 12
// tasks, one of weight 2 8 and every other 4, however small the batches.
func TestClaimFairRotationWeights(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for _, tn := range rotationTenants() {
				tenantTasks(t, b, tn, "noop", 40, 0)
			}
			fair := &store.Fairness{Weights: map[string]float64{"t07": 3, "t21": 2}}
			total := map[string]int{}
			// Four rotations: the weights sum to 33.
			for range 4 * 33 / batch {
				for tn, n := range claimByTenant(t, b, fair, batch) {
					total[tn] += n
				}
			}
			want := map[string]int{}
			for _, tn := range rotationTenants() {
				want[tn] = 4
			}
			want["t07"], want["t21"] = 12, 8
			require.Equal(t, want, total, "four turns of the rotation, each tenant its weight's tasks in each")
		})
	}
}

// TestClaimFairRotationConcurrent: several instances (stores of their own,
// each with its own rotation) claiming small fair batches of 30 tenants at
// once never claim a task twice, and between them claim every task.
func TestClaimFairRotationConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const perTenant = 10
	for _, tn := range rotationTenants() {
		tenantTasks(t, b, tn, "noop", perTenant, 0)
	}
	var mu sync.Mutex
	seen := map[uuid.UUID]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := store.New(b.pool)
			owner := fmt.Sprintf("w%d", w)
			for {
				tasks, err := s.ClaimTasks(b.ctx, store.ClaimParams{
					Owner: owner, Total: 1 + w%3, Fair: &store.Fairness{},
					Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 1 + w%3, Lease: time.Minute}},
				})
				if err != nil {
					errs <- err
					return
				}
				if len(tasks) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range tasks {
					if prev, dup := seen[tk.ID]; dup {
						mu.Unlock()
						errs <- fmt.Errorf("task %s claimed by %s and %s", tk.ID, prev, owner)
						return
					}
					seen[tk.ID] = owner
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, seen, 30*perTenant)
}
