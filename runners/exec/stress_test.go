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
// ends with the permanent error naming the line: the runner never misses the
// kill, never blocks on a pipe the child still writes to, and never waits
// for a child that ignores SIGTERM beyond the grace period. Every child
// would otherwise live for 1000 s: a run that missed its kill ends at its
// deadline, with that deadline's error instead, and one that hangs is
// reported when the round's deadline passes. How long a run takes is not
// checked: on a loaded machine (48 children at once, each with its
// supervisor) it is not the runner's to bound.
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
		// stuck is when a run has surely missed its kill, however busy
		// the machine: the children sleep for 1000 s.
		stuck = 5 * time.Minute
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
		var running sync.Map // where → struct{}: the runs not yet returned
		for name, sc := range scenarios {
			for i := range concurrent {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(t.Context(), stuck)
					defer cancel()
					where := fmt.Sprintf("round %d, %s #%d", round, name, i)
					running.Store(where, struct{}{})
					defer running.Delete(where)
					start := time.Now()
					_, err := r.Run(ctx, runnertest.NewTask(wftype.ModeAsync, name), &runnertest.Recorder{})
					where += fmt.Sprintf(" (%s)", time.Since(start))
					if !wftype.IsPermanent(err) || !strings.Contains(err.Error(), fmt.Sprintf("file descriptor 3: line %d:", sc.line)) {
						t.Errorf("%s: want a permanent error naming line %d, got %v", where, sc.line, err)
					}
				})
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stuck + time.Minute):
			var left []string
			running.Range(func(k, _ any) bool { left = append(left, k.(string)); return true })
			t.Fatalf("runs still going %s after their deadline (the runner waits for a child it should have killed): %v", time.Minute, left)
		}
		require.False(t, t.Failed())
	}
}
