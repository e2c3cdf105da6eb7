package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ticks returns the recorded ticks of one schedule, in order.
func (b *bundle) ticks(t *testing.T, name string) []time.Time {
	t.Helper()
	rows, err := b.store.DB().Query(b.ctx, `SELECT tick FROM tasks.schedule_ticks WHERE schedule_name = $1 ORDER BY tick`, name)
	require.NoError(t, err)
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var at time.Time
		require.NoError(t, rows.Scan(&at))
		out = append(out, at.UTC())
	}
	require.NoError(t, rows.Err())
	return out
}

// requireGrid checks that ticks are exactly base+step, base+2·step, … up to
// and including until: none missing, none extra.
func requireGrid(t *testing.T, ticks []time.Time, base time.Time, step time.Duration, until time.Time) {
	t.Helper()
	var want []time.Time
	for at := base.Add(step); !at.After(until); at = at.Add(step) {
		want = append(want, at.UTC())
	}
	require.Equal(t, want, ticks)
}

// TestEverySlowerThanTheWakeUp: `@every 70s` and `@every 2m` keep firing
// when the leader passes once a minute (as it does at least) — each tick
// counts from the previous one, not from the last pass.
func TestEverySlowerThanTheWakeUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.leader(t, b.t0, "every-70s", "every-2m")
	end := b.t0
	for i := 1; i <= 10; i++ {
		end = b.t0.Add(time.Duration(i)*time.Minute + 400*time.Millisecond)
		_, err := s.RunAt(b.ctx, end)
		require.NoError(t, err)
	}
	requireGrid(t, b.ticks(t, "every-70s"), b.t0, 70*time.Second, end)
	requireGrid(t, b.ticks(t, "every-2m"), b.t0, 2*time.Minute, end)
	require.Len(t, b.ticks(t, "every-70s"), 8)
	require.Len(t, b.ticks(t, "every-2m"), 5)
}

// TestEveryAcrossLeaderChanges: `@every 2s` through 20 leader changes, each
// new leader starting a few seconds (and fractions of one) after the last
// one's final pass, passes at irregular times: every tick of the grid fires,
// once.
func TestEveryAcrossLeaderChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := b.t0
	for leader := 0; leader < 20; leader++ {
		s := b.leader(t, now, "every-2s")
		for pass := 0; pass < 4; pass++ {
			// 0.7s, 1.3s, 2.9s, 1.1s, … apart: off the grid, some passes
			// with no tick due, some with two.
			now = now.Add(time.Duration(700+leader*37%500+pass*600) * time.Millisecond)
			_, err := s.RunAt(b.ctx, now)
			require.NoError(t, err)
		}
		// The leader dies; the next one leads 1.5–3.4 seconds later.
		now = now.Add(time.Duration(1500+leader*97%1900) * time.Millisecond)
	}
	b.leader(t, now, "every-2s")
	requireGrid(t, b.ticks(t, "every-2s"), b.t0, 2*time.Second, now)
}

// TestNewScheduleStartsWhenFirstSeen: a schedule deployed now fires none of
// the ticks before it (the old catch-up window fired two minutes' worth at
// once), and its first sighting is durable: a leader that dies before the
// first tick does not move it. A sees `@every 70s` and `* * * * *` at
// t0+30s and dies at t0+50s; B leads from t0+2m05s: each schedule's first
// tick fires (t0+1m40s, t0+1m), counted from A's sighting, not from B's.
func TestNewScheduleStartsWhenFirstSeen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.scheduler(t, "every-70s", "every-minute")
	r, err := a.Resume(b.ctx, b.t0.Add(30*time.Second))
	require.NoError(t, err)
	require.Zero(t, r.Fired, "nothing from before the first sighting fires")
	r, err = a.RunAt(b.ctx, b.t0.Add(50*time.Second))
	require.NoError(t, err)
	require.Zero(t, r.Fired)

	c := b.scheduler(t, "every-70s", "every-minute")
	r, err = c.Resume(b.ctx, b.t0.Add(125*time.Second))
	require.NoError(t, err)
	require.Equal(t, 3, r.Fired)
	seen := b.t0.Add(30 * time.Second)
	requireGrid(t, b.ticks(t, "every-70s"), seen, 70*time.Second, b.t0.Add(125*time.Second))
	require.Equal(t, []time.Time{b.t0.Add(time.Minute), b.t0.Add(2 * time.Minute)}, b.ticks(t, "every-minute"))
	require.Equal(t, b.t0.Add(170*time.Second), c.NextTick())
}
