package dispatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
)

// TestCensus: after a fair claim that found one tenant, claims skip
// fairness until a task is queued, censusClaims of them were made, or the
// finding is censusAge old; a finding of more tenants, or none, keeps every
// claim fair, and fairness off stays off.
func TestCensus(t *testing.T) {
	t.Parallel()
	f := &store.Fairness{}
	t0 := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	var c census
	require.Same(t, f, c.fairness(f, t0), "nothing found yet")
	require.Nil(t, c.fairness(nil, t0), "fairness off")

	c.record("ta", t0)
	for i := range censusClaims {
		require.Nil(t, c.fairness(f, t0.Add(time.Duration(i)*time.Millisecond)), "claim %d after the census", i)
	}
	require.Same(t, f, c.fairness(f, t0), "censusClaims claims without fairness: the next one is fair")

	c.record("ta", t0.Add(time.Second))
	require.Nil(t, c.fairness(f, t0.Add(time.Second)))
	c.taskQueued(store.QueuedPayload("noop", "ta"))
	require.Nil(t, c.fairness(f, t0.Add(time.Second)), "the one tenant queued a task")
	c.taskQueued(store.QueuedPayload("noop", "tb"))
	require.Same(t, f, c.fairness(f, t0.Add(time.Second)), "another tenant queued a task")
	require.Nil(t, c.fairness(f, t0.Add(time.Second)), "the signal is spent by the fair claim")
	c.taskQueued("noop")
	require.Same(t, f, c.fairness(f, t0.Add(time.Second)), "a task was queued; the signal does not say by whom")
	require.Nil(t, c.fairness(f, t0.Add(time.Second)), "the signal is spent by the fair claim")
	require.Same(t, f, c.fairness(f, t0.Add(time.Second+censusAge)), "the census is too old")

	c.record("", t0.Add(2*time.Second))
	require.Same(t, f, c.fairness(f, t0.Add(2*time.Second)), "two tenants")
	c.record("ta", t0.Add(time.Second))
	require.Same(t, f, c.fairness(f, t0.Add(2*time.Second)), "an older claim's finding does not overwrite a newer one")
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
	slot := func(max int) []store.ClaimSlot {
		return []store.ClaimSlot{{Mode: p.Mode, TaskType: p.TaskType, Max: max}}
	}
	var c census
	a := slot(200)
	ta := c.resume(a)
	require.Equal(t, store.ClaimSlot{Mode: p.Mode, TaskType: p.TaskType, Max: 200}, a[0], "nothing out: from the top, nothing passed over")
	b := slot(150)
	tb := c.resume(b)
	require.Equal(t, "", b[0].FairAfter)
	require.Equal(t, 200, b[0].FairSkip, "a serves the first 200")

	c.scanned(b, tb, map[store.Pair]string{p: "t0500"}) // b ends first
	d := slot(100)
	td := c.resume(d)
	require.Equal(t, "", d[0].FairAfter, "a, begun before b, is still out")
	require.Equal(t, 350, d[0].FairSkip, "a's 200 and b's 150: b's window counts until a ends")

	c.scanned(a, ta, map[store.Pair]string{p: "t0800"})
	e := slot(100)
	te := c.resume(e)
	require.Equal(t, "t0500", e[0].FairAfter, "past a and b: b's end, not a's")
	require.Equal(t, 100, e[0].FairSkip, "d is still out")

	c.scanned(d, td, nil) // d failed
	c.scanned(e, te, map[store.Pair]string{p: "t0300"})
	f := slot(100)
	c.resume(f)
	require.Equal(t, store.ClaimSlot{Mode: p.Mode, TaskType: p.TaskType, Max: 100, FairAfter: "t0300"}, f[0])
}
