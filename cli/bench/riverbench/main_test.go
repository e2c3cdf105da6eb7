package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/cli/bench"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestCompare runs the whole comparison small, River and wf on the test
// server: every run completes every job, the ratios are wf's over River's,
// and the markdown's generated part is rewritten while the rest is kept.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "BENCHMARKS.md")
	require.NoError(t, os.WriteFile(md, []byte("# Benchmarks\n\nprose kept\n"), 0o644))
	js := filepath.Join(dir, "compare.json")
	var out, errOut bytes.Buffer
	code := run([]string{"--tasks", "600", "--slots", "50,200", "--river-workers", "100", "--insert-batch", "250", "--baseline",
		"--database-url", dbtest.BaseURL(t), "--markdown", md, "--json-out", js}, &out, &errOut)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())

	var c bench.Comparison
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &c))
	require.True(t, strings.HasPrefix(c.Rival, "River v0."), c.Rival)
	require.Len(t, c.Runs, 4)
	for _, r := range c.Runs {
		require.Equal(t, 600, r.Completed, r.Name)
		require.Positive(t, r.EnqueueRate, r.Name)
		require.Positive(t, r.CompleteRate, r.Name)
	}
	river, wf50 := c.Runs[0], c.Runs[1]
	require.False(t, river.Wf)
	require.Equal(t, 50, wf50.Slots)
	require.Len(t, c.Ratios, 4)
	require.InDelta(t, wf50.CompleteRate/river.CompleteRate, c.Ratios[0].Ratio, 1e-9)
	base := c.Runs[3]
	require.True(t, base.Baseline)
	require.Equal(t, 50, base.Slots)
	require.InDelta(t, base.CompleteRate/river.CompleteRate, c.Ratios[3].Ratio, 1e-9)

	text, err := os.ReadFile(md)
	require.NoError(t, err)
	require.Contains(t, string(text), "prose kept")
	require.Contains(t, string(text), "| River v0.")
	require.Contains(t, out.String(), "burn-down: wf at 50 slots")

	// A second run replaces the generated part instead of adding one.
	require.NoError(t, bench.UpdateCompareMarkdown(md, &c))
	text, err = os.ReadFile(md)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(text), "wf bench compare: begin"))
}

// TestCompareEnqueueOnly runs the bulk enqueues alone for two rounds: River
// and wf each enqueue every job in a database of their own, River first in
// the first round and wf first in the second, nothing is burnt down, and the
// one ratio is the enqueue's.
func TestCompareEnqueueOnly(t *testing.T) {
	js := filepath.Join(t.TempDir(), "compare.json")
	var out, errOut bytes.Buffer
	code := run([]string{"--enqueue-only", "--rounds", "2", "--tasks", "1200", "--insert-batch", "500",
		"--database-url", dbtest.BaseURL(t), "--json-out", js}, &out, &errOut)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	var c bench.Comparison
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &c))
	require.Len(t, c.Runs, 4)
	for i, wf := range []bool{false, true, true, false} {
		r := c.Runs[i]
		require.Equal(t, wf, r.Wf, "run %d: %s", i, r.Name)
		require.Equal(t, i/2+1, r.Round, r.Name)
		require.Positive(t, r.EnqueueRate, r.Name)
		require.Zero(t, r.Completed, r.Name)
		require.Zero(t, r.CompleteRate, r.Name)
		require.Positive(t, r.BenchSeconds, r.Name) // the enqueue's client CPU
	}
	require.Len(t, c.Ratios, 1)
	require.Contains(t, c.Ratios[0].Name, "bulk enqueue")
	require.InDelta(t, (c.Runs[1].EnqueueRate+c.Runs[2].EnqueueRate)/(c.Runs[0].EnqueueRate+c.Runs[3].EnqueueRate), c.Ratios[0].Ratio, 1e-9)
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"--slots", "0"}, {"--slots", "x"}, {"extra"}, {"--river-workers", "0"}, {"--nope"},
		{"--enqueue-only", "--markdown", "x.md"}, {"--enqueue-only", "--baseline"}} {
		var out, errOut bytes.Buffer
		require.Equal(t, 2, run(args, &out, &errOut), args)
		require.NotEmpty(t, errOut.String(), args)
	}
}
