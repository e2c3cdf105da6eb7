package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// oneSlot is a claim's slots: Max tasks of pair p.
func oneSlot(p store.Pair, max int) []store.ClaimSlot {
	return []store.ClaimSlot{{Mode: p.Mode, TaskType: p.TaskType, Max: max}}
}

// found records in c a fair claim of slots that began at `at` and found
// one tenant alone ("" for none).
func found(c *census, slots []store.ClaimSlot, one string, at time.Time) {
	c.end(c.begin(slots, at), store.Claimed{OneTenant: one})
}

// TestCensus: after a fair claim that found one tenant, claims skip
// fairness until a task is queued or the finding is censusAge old,
// however many claims are made meanwhile; a finding of more tenants, or
// none, keeps every claim fair, and fairness off stays off.
func TestCensus(t *testing.T) {
	t.Parallel()
	f := &store.Fairness{}
	x := oneSlot(store.Pair{Mode: wftype.ModeAsync, TaskType: "x"}, 10)
	t0 := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	var c census
	require.Same(t, f, c.fairness(f, x, t0), "nothing found yet")
	require.Nil(t, c.fairness(nil, x, t0), "fairness off")

	found(&c, x, "ta", t0)
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * censusAge / 1000)
		require.Nil(t, c.fairness(f, x, now), "claim %d after the census, %s later", i, now.Sub(t0))
	}
	require.Same(t, f, c.fairness(f, x, t0.Add(censusAge)), "the finding is censusAge old: the next claim is fair")

	found(&c, x, "ta", t0.Add(time.Second))
	require.Nil(t, c.fairness(f, x, t0.Add(time.Second)))
	c.taskQueued(store.QueuedPayload("x", "ta"))
	require.Nil(t, c.fairness(f, x, t0.Add(time.Second)), "the one tenant queued a task")
	c.taskQueued(store.QueuedPayload("x", "tb"))
	require.Same(t, f, c.fairness(f, x, t0.Add(time.Second)), "another tenant queued a task")
	require.Nil(t, c.fairness(f, x, t0.Add(time.Second)), "the signal is spent by the fair claim")
	c.taskQueued("x")
	require.Same(t, f, c.fairness(f, x, t0.Add(time.Second)), "a task was queued; the signal does not say by whom")
	require.Nil(t, c.fairness(f, x, t0.Add(time.Second)), "the signal is spent by the fair claim")
	require.Same(t, f, c.fairness(f, x, t0.Add(time.Second+censusAge)), "the census is too old")

	found(&c, x, "", t0.Add(2*time.Second))
	require.Same(t, f, c.fairness(f, x, t0.Add(2*time.Second)), "two tenants")
	found(&c, x, "ta", t0.Add(time.Second))
	require.Same(t, f, c.fairness(f, x, t0.Add(2*time.Second)), "an older claim's finding does not overwrite a newer one")
}

// TestCensusFairForPairsItDidNotScan: a finding of one tenant holds for
// the pairs its fair claim scanned only. A claim that also takes a pair
// the finding never saw (one whose per-instance cap left it no slot then)
// is fair: another tenant may wait there alone.
func TestCensusFairForPairsItDidNotScan(t *testing.T) {
	t.Parallel()
	f := &store.Fairness{}
	flood := store.Pair{Mode: wftype.ModeAsync, TaskType: "flood"}
	capped := store.Pair{Mode: wftype.ModeAsync, TaskType: "capped"}
	t0 := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	var c census
	found(&c, oneSlot(flood, 7), "ta", t0)
	require.Nil(t, c.fairness(f, oneSlot(flood, 7), t0), "the pair the finding scanned")
	both := append(oneSlot(flood, 7), oneSlot(capped, 1)...)
	require.Same(t, f, c.fairness(f, both, t0), "capped was not scanned")
	require.Nil(t, c.fairness(f, oneSlot(flood, 7), t0), "and flood alone still skips fairness")

	found(&c, both, "ta", t0.Add(time.Millisecond))
	require.Nil(t, c.fairness(f, both, t0.Add(time.Millisecond)), "a finding over both pairs")
	require.Nil(t, c.fairness(f, oneSlot(capped, 1), t0.Add(time.Millisecond)), "holds for either")
}

// TestCensusSignalDuringFairClaim: a signal that names the one tenant of
// the finding of the moment is passed over, but a fair claim out then may
// have read the tasks before it: when that claim ends finding another
// tenant alone (or several), the next claim is fair. When it finds the
// signal's tenant alone again, claims go on without fairness.
func TestCensusSignalDuringFairClaim(t *testing.T) {
	t.Parallel()
	f := &store.Fairness{}
	x := oneSlot(store.Pair{Mode: wftype.ModeAsync, TaskType: "x"}, 10)
	t0 := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		finds string
		fair  bool
	}{{"ta", true}, {"", true}, {"tb", false}} {
		var c census
		found(&c, x, "tb", t0)
		start := t0.Add(censusAge)
		require.NotNil(t, c.fairness(f, x, start), "the finding is censusAge old: a fair claim")
		fc := c.begin(x, start)
		c.taskQueued(store.QueuedPayload("x", "tb")) // tb enqueues while the claim is out
		c.end(fc, store.Claimed{OneTenant: tc.finds})
		if tc.fair {
			require.Same(t, f, c.fairness(f, x, start.Add(time.Millisecond)),
				"the claim found %q alone, but tb queued a task after it began", tc.finds)
		} else {
			require.Nil(t, c.fairness(f, x, start.Add(time.Millisecond)), "tb alone, as its signal said")
		}
		found(&c, x, "tb", start.Add(time.Second))
		c.taskQueued(store.QueuedPayload("x", "tb")) // no claim out
		require.Nil(t, c.fairness(f, x, start.Add(time.Second)), "the finding's tenant queued a task")
	}
}

// TestCensusTurns: a fair claim that begins while others of its pair are
// out resumes from the same point but passes over the tenants they serve
// (the sum of their Max); the resume point moves to a claim's scan end
// only once every claim begun before it ended, so a later claim that ends
// first does not move it back when the earlier one ends; a failed claim
// leaves the point where it was.
func TestCensusTurns(t *testing.T) {
	t.Parallel()
	p := store.Pair{Mode: "ASYNCHRONOUS", TaskType: "x"}
	t0 := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	ends := func(end string) store.Claimed { return store.Claimed{ScanEnd: map[store.Pair]string{p: end}} }
	var c census
	a := oneSlot(p, 200)
	ta := c.begin(a, t0)
	require.Equal(t, store.ClaimSlot{Mode: p.Mode, TaskType: p.TaskType, Max: 200}, a[0], "nothing out: from the top, nothing passed over")
	b := oneSlot(p, 150)
	tb := c.begin(b, t0)
	require.Equal(t, "", b[0].FairAfter)
	require.Equal(t, 200, b[0].FairSkip, "a serves the first 200")

	c.end(tb, ends("t0500")) // b ends first
	d := oneSlot(p, 100)
	td := c.begin(d, t0)
	require.Equal(t, "", d[0].FairAfter, "a, begun before b, is still out")
	require.Equal(t, 350, d[0].FairSkip, "a's 200 and b's 150: b's window counts until a ends")

	c.end(ta, ends("t0800"))
	e := oneSlot(p, 100)
	te := c.begin(e, t0)
	require.Equal(t, "t0500", e[0].FairAfter, "past a and b: b's end, not a's")
	require.Equal(t, 100, e[0].FairSkip, "d is still out")

	c.end(td, store.Claimed{}) // d failed
	c.end(te, ends("t0300"))
	f := oneSlot(p, 100)
	c.begin(f, t0)
	require.Equal(t, store.ClaimSlot{Mode: p.Mode, TaskType: p.TaskType, Max: 100, FairAfter: "t0300"}, f[0])
}

// TestCensusTurnsResumeWhereTenantsWereLeftOut: a claim that left tenants
// of its window out (store.Claimed.LeftOut) holds the resume point at its
// scan end: the claims begun while it was out passed over those tenants,
// so their ends (further on) do not move the point, in whichever order
// they end, and a claim that begins next is not told to pass over the
// windows of those still out. Claims begun after it move the point on as
// before.
func TestCensusTurnsResumeWhereTenantsWereLeftOut(t *testing.T) {
	t.Parallel()
	p := store.Pair{Mode: "ASYNCHRONOUS", TaskType: "x"}
	t0 := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	ends := func(end string, leftOut bool) store.Claimed {
		c := store.Claimed{ScanEnd: map[store.Pair]string{p: end}}
		if leftOut {
			c.LeftOut = map[store.Pair]bool{p: true}
		}
		return c
	}
	var c census
	ta, tb, tc := c.begin(oneSlot(p, 4), t0), c.begin(oneSlot(p, 4), t0), c.begin(oneSlot(p, 4), t0)
	c.end(tb, ends("t03", false)) // b's window: the 4 tenants after a's
	c.end(ta, ends("t10", true))  // a served t11 and t10 of its four
	d := oneSlot(p, 4)
	td := c.begin(d, t0)
	require.Equal(t, "t10", d[0].FairAfter, "a left t09 and t08 out: they come next, not after b's end")
	require.Equal(t, 0, d[0].FairSkip, "c passed over them too: its window is let go")

	c.end(tc, ends("t00", false))
	e := oneSlot(p, 4)
	c.begin(e, t0)
	require.Equal(t, "t10", e[0].FairAfter, "c's end does not move the point")
	require.Equal(t, 4, e[0].FairSkip, "d is out")

	c.end(td, ends("t06", false))
	f := oneSlot(p, 4)
	c.begin(f, t0)
	require.Equal(t, "t06", f[0].FairAfter, "d served its window: the point moves on to its end")
	require.Equal(t, 4, f[0].FairSkip, "e is out")
}

// TestCensusParallelClaimsServeEveryTenant: two fair claims out at once,
// as claimParallel makes them, each of two pairs cut to its total, so each
// serves half the tenants its scan visits of a pair. The second passes
// over the first's window; had the pair's resume point moved to the
// second's scan end, the tenants the first visited but left out would
// lose their turn every round (4 of 12 never served in 12 rounds). Each
// round ends its claims in another order.
func TestCensusParallelClaimsServeEveryTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := dbtest.NewStore(t)
	const tenants, total, rounds = 12, 4, 12
	types := []string{"noop", "other"}
	var batch []store.NewTask
	for i := range tenants {
		for _, tt := range types {
			for k := range 3 * rounds {
				batch = append(batch, store.NewTask{SchemaName: fmt.Sprintf("t%02d", i), Scope: wftype.ScopeCatalog,
					ExecutionMode: wftype.ModeAsync, TaskType: tt, Inputs: json.RawMessage(fmt.Sprintf(`{"k":%d}`, k))})
			}
		}
	}
	_, err := st.InsertTasks(ctx, batch)
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	var c census
	served := map[string]int{} // noop's tasks by tenant
	for round := range rounds {
		slots := [2][]store.ClaimSlot{}
		out := [2]*fairClaim{}
		for i := range slots {
			for _, tt := range types {
				slots[i] = append(slots[i], store.ClaimSlot{Mode: wftype.ModeAsync, TaskType: tt, Max: total, Lease: time.Minute})
			}
			out[i] = c.begin(slots[i], t0)
		}
		var claimed [2]store.Claimed
		for i := range slots {
			claimed[i], err = st.Claim(ctx, store.ClaimParams{Owner: "w", Total: total, Fair: &store.Fairness{}, Slots: slots[i]})
			require.NoError(t, err)
			require.Len(t, claimed[i].Tasks, total)
			for _, tk := range claimed[i].Tasks {
				if tk.TaskType == "noop" {
					served[tk.SchemaName]++
				}
			}
		}
		first := round % 2
		c.end(out[first], claimed[first])
		c.end(out[1-first], claimed[1-first])
	}
	var never []string
	for i := range tenants {
		if tn := fmt.Sprintf("t%02d", i); served[tn] == 0 {
			never = append(never, tn)
		}
	}
	require.Empty(t, never, "tenants never served in %d rounds (served: %v)", rounds, served)
}
