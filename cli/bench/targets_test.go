package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoisyTargets: the suite judges the noisy-neighbour runs against issue
// 21's targets (the others' p99 with fairness on, the flood's rate on/off),
// and says "not measured" when a run is missing.
func TestNoisyTargets(t *testing.T) {
	t.Parallel()
	on, off := true, false
	fair := &Result{Mode: ModeNoisy, Fair: &on, FloodRate: 1800, StartLatency: &Percentiles{Count: 400, P50: 120, P99: 900}}
	unfair := &Result{Mode: ModeNoisy, Fair: &off, FloodRate: 2100, StartLatency: &Percentiles{Count: 400, P50: 9000, P99: 9500}}

	ts := targets(&Suite{Runs: []SuiteRun{{Name: noisyRunName(true, 1), Result: fair}, {Name: noisyRunName(false, 1), Result: unfair}}})
	p99 := findTarget(t, ts, "noisy neighbour: B..E")
	require.True(t, p99.Met)
	require.Equal(t, "900 ms", p99.Measured)
	rate := findTarget(t, ts, "noisy neighbour: A's")
	require.False(t, rate.Met) // 1800/2100 = 0.86
	require.Equal(t, "0.86×", rate.Measured)

	ts = targets(&Suite{Runs: []SuiteRun{{Name: noisyRunName(true, 1), Result: fair}}})
	require.Equal(t, "not measured", findTarget(t, ts, "noisy neighbour: A's").Measured)

	// Three rounds: the worst p99, the median ratio.
	round := func(rate, p99 float64, fairOn bool) *Result {
		return &Result{Mode: ModeNoisy, Fair: &fairOn, FloodRate: rate, StartLatency: &Percentiles{Count: 400, P99: p99}}
	}
	ts = targets(&Suite{Runs: []SuiteRun{
		{Name: noisyRunName(true, 1), Result: round(1000, 300, true)}, {Name: noisyRunName(false, 1), Result: round(2000, 9000, false)},
		{Name: noisyRunName(true, 2), Result: round(1900, 1200, true)}, {Name: noisyRunName(false, 2), Result: round(2000, 9000, false)},
		{Name: noisyRunName(true, 3), Result: round(2100, 200, true)}, {Name: noisyRunName(false, 3), Result: round(2000, 9000, false)},
	}})
	p99 = findTarget(t, ts, "noisy neighbour: B..E")
	require.False(t, p99.Met)
	require.Equal(t, "1200 ms", p99.Measured)
	rate = findTarget(t, ts, "noisy neighbour: A's")
	require.True(t, rate.Met) // 0.5, 0.95, 1.05
	require.Equal(t, "0.95×", rate.Measured)

	var buf bytes.Buffer
	fair.WriteText(&buf)
	require.Contains(t, buf.String(), "fairness         on; the flooding tenant ran 1800 tasks/s")
}

// TestIdleTargets: the idle run's memory and follower queries are judged
// against their goals, and are "not measured" without an idle result.
func TestIdleTargets(t *testing.T) {
	t.Parallel()
	idle := &Result{Mode: ModeIdle, Idle: &IdleResult{MaxRSSMB: 38.5, FollowerQueriesPerPoll: 1.25}}
	ts := targets(&Suite{Runs: []SuiteRun{{Name: "idle", Result: idle}}})
	rss := findTarget(t, ts, "`wf run` idle resident memory")
	require.True(t, rss.Met)
	require.Equal(t, "38.5 MiB", rss.Measured)
	queries := findTarget(t, ts, "queries per poll interval")
	require.False(t, queries.Met)
	require.Equal(t, "1.25", queries.Measured)

	ts = targets(&Suite{Runs: []SuiteRun{{Name: "idle", Result: &Result{Mode: ModeIdle}}}})
	require.Equal(t, "not measured", findTarget(t, ts, "`wf run` idle resident memory").Measured)
	require.Equal(t, "not measured", findTarget(t, ts, "queries per poll interval").Measured)
}

// findTarget returns the target of ts whose name starts with prefix.
func findTarget(t *testing.T, ts []Target, prefix string) Target {
	t.Helper()
	for _, tg := range ts {
		if strings.HasPrefix(tg.Name, prefix) {
			return tg
		}
	}
	t.Fatalf("no target %q in %v", prefix, ts)
	return Target{}
}

// TestSuiteAlternatesNoisyPairs: the suite runs noisyRounds pairs of
// noisy-neighbour runs, fairness on first in odd rounds and off first in
// even ones, so that neither side of A's throughput ratio always runs
// second.
func TestSuiteAlternatesNoisyPairs(t *testing.T) {
	t.Parallel()
	var got, want []string
	for _, r := range standardRuns(Config{}, false) {
		if r.cfg.Mode == ModeNoisy {
			got = append(got, r.Name)
		}
	}
	for k := 1; k <= noisyRounds; k++ {
		first := k%2 == 1
		want = append(want, noisyRunName(first, k), noisyRunName(!first, k))
	}
	require.Equal(t, want, got)
}
