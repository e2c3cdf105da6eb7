package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/cli/bench"
)

// TestChaosSoak is the short soak of `make test`: three `wf run` processes
// (the built binary) on a local PostgreSQL of their own, killed at random
// (SIGKILL) every few seconds, the leader's session ended, PostgreSQL
// restarted once, with tasks, events and a schedule flowing; then the
// invariants (bench.RunChaos) must all hold. WF_CHAOS_DURATION sets the
// fault phase (default 30s; the long soak is `wf bench chaos --duration
// 10m`, see RELIABILITY.md).
func TestChaosSoak(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the soak takes minutes")
	}
	duration := 30 * time.Second
	if v := os.Getenv("WF_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		duration = d
	}
	bin := buildWF(t)
	ctx, cancel := context.WithTimeout(context.Background(), duration+10*time.Minute)
	defer cancel()
	res, err := bench.RunChaos(ctx, bench.ChaosConfig{Duration: duration, Executable: bin,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	var sb strings.Builder
	res.WriteText(&sb)
	t.Log(sb.String())
	require.Empty(t, res.Violations)
	require.Positive(t, res.Kills)
	require.Equal(t, 1, res.PostgresRestarts)
	require.Positive(t, res.Enqueued)
	require.Positive(t, res.Emitted)
	require.Positive(t, res.Ticks)
	require.Positive(t, res.Runs)
}
