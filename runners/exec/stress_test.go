package exec_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	wfexec "github.com/wfhq/wf/runners/exec"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

// TestRecordsMalformedStress runs many children at once that write a bad
// record line at different moments of their life, and checks that every run
// ends promptly with the permanent error naming the line: the runner never
// misses the kill, never blocks on a pipe the child still writes to, and
// never waits for a child that ignores SIGTERM longer than the grace period.
//
// The moments: the very first line, then a sleep (the child is killed while
// idle); the middle of a stream larger than a pipe's buffer, so the child is
// blocked writing when the reader stops; a child that ignores SIGTERM (only
// SIGKILL ends it); and a child that writes the bad line and exits at once
// (the line is read after the exit).
func TestRecordsMalformedStress(t *testing.T) {
	t.Parallel()
	const (
		concurrent = 12 // runs of each scenario at once
		rounds     = 2
		grace      = 200 * time.Millisecond
		// bound is how long one run may take: the grace period, the drain
		// timeout and generous room for a loaded machine.
		bound = 15 * time.Second
	)
	good := `{"status":"SUCCESS","message":null,"record":{"type":"Feature","properties":{"pad":"` + strings.Repeat("x", 900) + `"},"stats":{},"system":{}}}`
	bad := `{"status":"SUCCESS","record":{"typo":1}}`
	many := func(n int) string { return strings.Repeat(good+"\n", n) }
	dir := t.TempDir()
	scenarios := map[string]struct {
		body string
		line int
	}{
		"FirstLine":    {"cat >&3 <<'EOF'\n" + bad + "\nEOF\nsleep 1000", 1},
		"WhileWriting": {"cat >&3 <<'EOF'\n" + many(100) + bad + "\n" + many(300) + "EOF\nsleep 1000", 101},
		"IgnoresTERM":  {"trap '' TERM\ncat >&3 <<'EOF'\n" + many(3) + bad + "\nEOF\nsleep 1000 &\nwait", 4},
		"AfterExit":    {"cat >&3 <<'EOF'\n" + many(2) + bad + "\nEOF\nexit 0", 3},
	}
	handlers := map[string]wfexec.Handler{}
	for name, sc := range scenarios {
		handlers[name] = wfexec.Handler{Command: script(t, dir, name, sc.body), KillGrace: grace}
	}
	r := newRunner(t, wfexec.Config{Handlers: handlers})

	for round := range rounds {
		var wg sync.WaitGroup
		for name, sc := range scenarios {
			for i := range concurrent {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(t.Context(), 4*bound)
					defer cancel()
					start := time.Now()
					_, err := r.Run(ctx, runnertest.NewTask(wftype.ModeAsync, name), &runnertest.Recorder{})
					took := time.Since(start)
					where := fmt.Sprintf("round %d, %s #%d (%s)", round, name, i, took)
					if took > bound {
						t.Errorf("%s: the run took longer than %s", where, bound)
					}
					if !wftype.IsPermanent(err) || !strings.Contains(err.Error(), fmt.Sprintf("file descriptor 3: line %d:", sc.line)) {
						t.Errorf("%s: want a permanent error naming line %d, got %v", where, sc.line, err)
					}
				})
			}
		}
		wg.Wait()
		require.False(t, t.Failed())
	}
}
