package bench_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/cli/bench"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// runSmall runs a mode with tiny sizes on the test server (in a database of
// the bench's own, dropped at the end). The numbers are not checked: only
// that every part of the result is there.
func runSmall(t *testing.T, cfg bench.Config) *bench.Result {
	t.Helper()
	cfg.DatabaseURL = dbtest.BaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, cfg)
	require.NoError(t, err)
	require.NotEmpty(t, res.Postgres.Version)
	require.Contains(t, res.Postgres.Settings, "synchronous_commit")
	require.Positive(t, res.Machine.CPUs)
	return res
}

func TestBurnDown(t *testing.T) {
	t.Parallel()
	res := runSmall(t, bench.Config{Mode: bench.ModeBurnDown, Tasks: 300, Slots: 50, InsertBatch: 100})
	require.Equal(t, 300, res.Inserted)
	require.Equal(t, 300, res.Completed)
	require.Positive(t, res.InsertRate)
	require.Positive(t, res.CompleteRate)
	require.NotNil(t, res.RunLatency)
	require.Positive(t, res.Commits)
	require.Less(t, res.CommitsPerTask, 1.0, "claims and completions are batched")
}

func TestBurnDownHTTP(t *testing.T) {
	t.Parallel()
	res := runSmall(t, bench.Config{Mode: bench.ModeBurnDown, Tasks: 100, Slots: 20, Runner: bench.RunnerHTTP})
	require.Equal(t, 100, res.Completed)
}

func TestLatency(t *testing.T) {
	t.Parallel()
	res := runSmall(t, bench.Config{Mode: bench.ModeLatency, Rate: 100, Duration: time.Second})
	require.NotNil(t, res.StartLatency)
	require.NotNil(t, res.CompleteLatency)
	require.Equal(t, res.Inserted, res.Completed)
	require.NotNil(t, res.BacklogFlat)
}

func TestScale(t *testing.T) {
	t.Parallel()
	res := runSmall(t, bench.Config{Mode: bench.ModeScale, ScaleRows: []int{0, 2000}, ScaleClaims: 5, ScaleBatch: 10})
	require.Len(t, res.Scale, 2)
	require.Equal(t, 2000, res.Scale[1].FinishedRows)
	require.Contains(t, res.Scale[1].Explain, "Update on tasks")
	_, ok := res.ScaleRatio()
	require.True(t, ok)
}

func TestOverview(t *testing.T) {
	t.Parallel()
	res := runSmall(t, bench.Config{Mode: bench.ModeOverview, OverviewFinished: 3000, OverviewPending: 200, OverviewRuns: 2})
	o := res.Overview
	require.NotNil(t, o)
	require.Equal(t, 3000, o.Finished)
	byName := map[string]bench.OverviewStatement{}
	for _, s := range o.Statements {
		require.Equal(t, 2, s.Took.Count, s.Name)
		require.Contains(t, s.Plan, "Execution Time", s.Name)
		byName[s.Name+"/"+s.Tenant] = s
	}
	require.Len(t, byName, 9, "six statements, three of them also for one tenant")
	// The overview reads the snapshot; the refresh counts the tasks.
	require.Contains(t, byName["pending/"].Plan, "pending_snapshot")
	require.Contains(t, byName["pending_refresh/"].Plan, " on tasks_p")
	require.NotContains(t, byName["pending/"].Plan, " on tasks_p")
	require.NotNil(t, o.ReadOverview)
	var out strings.Builder
	res.WriteText(&out)
	require.Contains(t, out.String(), "pending (one tenant)")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	_, err := bench.Run(context.Background(), bench.Config{Mode: "sideways"})
	require.ErrorContains(t, err, `unknown bench mode "sideways"`)
	_, err = bench.Run(context.Background(), bench.Config{Mode: bench.ModeBurnDown, Runner: "carrier-pigeon"})
	require.ErrorContains(t, err, `unknown runner "carrier-pigeon"`)
	_, err = bench.Run(context.Background(), bench.Config{Mode: bench.ModeBurnDown, Instances: 2})
	require.ErrorContains(t, err, "instances need the wf executable")
}

func TestUpdateMarkdownKeepsProse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	s := &bench.Suite{Started: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Targets: []bench.Target{{Name: "burn-down", Goal: "≥ 30,000 tasks/s", Measured: "31000 tasks/s", Met: true}}}
	require.NoError(t, bench.UpdateMarkdown(path, s))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "| burn-down | ≥ 30,000 tasks/s | 31000 tasks/s | ✅ met |")

	prose := "# Benchmarks\n\nWhat limits each target.\n\n"
	require.NoError(t, os.WriteFile(path, append([]byte(prose), b[len("# Benchmarks\n\n"):]...), 0o644))
	s.Targets[0].Measured, s.Targets[0].Met = "29000 tasks/s", false
	require.NoError(t, bench.UpdateMarkdown(path, s))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "What limits each target.")
	require.Contains(t, string(b), "| burn-down | ≥ 30,000 tasks/s | 29000 tasks/s | ❌ missed |")
	require.NotContains(t, string(b), "31000")

	// The comparison's part goes after it, and leaves it be.
	c := &bench.Comparison{Started: s.Started, Rival: "River", Ratios: []bench.ComparedRatio{{Name: "default", Goal: 1, Wf: 900, Rival: 1000, Ratio: 0.9}}}
	require.NoError(t, bench.UpdateCompareMarkdown(path, c))
	require.NoError(t, bench.UpdateCompareMarkdown(path, c))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "| burn-down | ≥ 30,000 tasks/s | 29000 tasks/s | ❌ missed |")
	require.Equal(t, 1, strings.Count(string(b), "<!-- wf bench compare: begin generated"), "rewritten in place")
	require.Contains(t, string(b), "| default | ≥ 1.0× | 900/s | 1000/s | 0.90× | ❌ missed |")
	require.Greater(t, strings.Index(string(b), "wf bench compare: begin"), strings.Index(string(b), "wf bench: end generated"))
}

// TestNoisyNeighbour: both ways, every task completes and the neighbours'
// enqueue→start is measured for each of their 400 tasks.
func TestNoisyNeighbour(t *testing.T) {
	t.Parallel()
	for _, unfair := range []bool{false, true} {
		res := runSmall(t, bench.Config{Mode: bench.ModeNoisy, Tasks: 500, Slots: 20, InsertBatch: 100, Unfair: unfair})
		require.Equal(t, 900, res.Completed)
		require.Equal(t, 400, res.StartLatency.Count)
		require.Equal(t, !unfair, *res.Fair)
		require.Positive(t, res.FloodRate)
		require.Positive(t, res.CompleteRate)
	}
}

// TestCompareRefusesBadConfig: a side-by-side run with impossible sizes
// fails before it starts a server or creates a database.
func TestCompareRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []bench.CompareConfig{
		{Tasks: -1}, {Rounds: -2}, {WfSlots: []int{100, 0}}, {InsertBatch: -5},
	} {
		cfg.DatabaseURL = "postgres://127.0.0.1:1/none" // never reached
		_, err := bench.Compare(context.Background(), cfg, nil, io.Discard)
		require.Error(t, err, "%+v", cfg)
	}
}

// TestBurnDownBehindPgBouncerSessionMode: a session-mode PgBouncer refuses
// startup parameters it does not know ("unsupported startup parameter:
// jit"); the bench connects through it as `wf run` does (jit=off, else as
// given) and runs. The bouncer has room for the bench's sessions (its
// pools and the engine's hold theirs for the run).
func TestBurnDownBehindPgBouncerSessionMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	bounced := dbtest.PgBouncerSized(t, dbtest.BaseURL(t), "session", 60)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, bench.Config{DatabaseURL: bounced, Mode: bench.ModeBurnDown, Tasks: 200, Slots: 20, InsertBatch: 100})
	require.NoError(t, err)
	require.Equal(t, 200, res.Inserted)
	require.Equal(t, 200, res.Completed)
}
