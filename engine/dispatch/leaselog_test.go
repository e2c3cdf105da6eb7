package dispatch_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/wftype"
)

// warnings is a slog handler that keeps the messages of warnings and errors.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) matching(s string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, m := range w.msgs {
		if strings.Contains(m, s) {
			out = append(out, m)
		}
	}
	return out
}

// TestNoLeaseLostWarningForFinishedRuns: with heartbeats running all the
// time (every millisecond) beside 3,000 short runs, a heartbeat often
// starts while a run is still going and returns after its outcome was
// written: the task is no longer RUNNING, so the heartbeat does not hold
// it. That is a finished run, not a lost lease: no "lease lost" warning,
// and every task completes once.
func TestNoLeaseLostWarningForFinishedRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logs := &warnings{}
	r := funcRunner{types: map[string]bool{"quick": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	}}
	d := b.dispatcher(t, "w1", r, func(c *dispatch.Config) {
		c.HeartbeatInterval = time.Millisecond
		c.FlushInterval = time.Millisecond
		c.Logger = slog.New(logs)
	})
	stop := runFor(d)
	defer stop()
	enqueue(t, b, "quick", 3000, 3)
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == 3000 },
		2*time.Minute, 20*time.Millisecond)
	stop()
	require.Empty(t, logs.matching("lease lost"))
	var reruns int
	require.NoError(t, b.store.DB().QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE retry_count > 0`).Scan(&reruns))
	require.Zero(t, reruns)
}
