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

	c.record(true, t0)
	for i := range censusClaims {
		require.Nil(t, c.fairness(f, t0.Add(time.Duration(i)*time.Millisecond)), "claim %d after the census", i)
	}
	require.Same(t, f, c.fairness(f, t0), "censusClaims claims without fairness: the next one is fair")

	c.record(true, t0.Add(time.Second))
	require.Nil(t, c.fairness(f, t0.Add(time.Second)))
	c.taskQueued()
	require.Same(t, f, c.fairness(f, t0.Add(time.Second)), "a task was queued")
	require.Nil(t, c.fairness(f, t0.Add(time.Second)), "the signal is spent by the fair claim")
	require.Same(t, f, c.fairness(f, t0.Add(time.Second+censusAge)), "the census is too old")

	c.record(false, t0.Add(2*time.Second))
	require.Same(t, f, c.fairness(f, t0.Add(2*time.Second)), "two tenants")
	c.record(true, t0.Add(time.Second))
	require.Same(t, f, c.fairness(f, t0.Add(2*time.Second)), "an older claim's finding does not overwrite a newer one")
}
