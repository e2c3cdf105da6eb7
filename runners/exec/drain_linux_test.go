//go:build linux

package exec_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	wfexec "github.com/wfhq/wf/runners/exec"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

// warnSignal is a slog handler that closes warned at the first warning.
type warnSignal struct {
	once   sync.Once
	warned chan struct{}
}

func (w *warnSignal) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.once.Do(func() { close(w.warned) })
	}
	return nil
}
func (w *warnSignal) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnSignal) WithGroup(string) slog.Handler      { return w }

// slowReporter stands for a records reader that a loaded machine does not
// run for seconds: its first Report tells the child it was read (creates
// ready), then holds until the runner warns or hold passes.
type slowReporter struct {
	ready  string
	warned <-chan struct{}
	hold   time.Duration
	once   sync.Once
}

func (s *slowReporter) Report(context.Context, reporters.Envelope) error {
	s.once.Do(func() {
		_ = os.WriteFile(s.ready, nil, 0o644)
		select {
		case <-s.warned:
		case <-time.After(s.hold):
		}
	})
	return nil
}

func (s *slowReporter) Finish(context.Context) (map[string]any, error) { return nil, nil }

// TestRecordsReadAfterASlowDrain: a child that writes a bad record line and
// exits 0 fails its task even when the records reader is behind when the
// child is gone. The runner closed its end of the pipes 2 s (its drain
// timeout) after the child's group ended, unread lines and all, and the run
// succeeded: under load (48 children at once, -cpu 1),
// TestRecordsMalformedStress saw 'got <nil>' for AfterExit runs. Here the
// reader holds the first line until the runner warns that it closes the
// pipes (it never should: the bad line is waiting in the pipe), or for
// 10 s, well past that timeout.
func TestRecordsReadAfterASlowDrain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	good := `{"status":"SUCCESS","message":null,"record":{"type":"Feature","properties":{},"stats":{},"system":{}}}`
	bad := `{"status":"SUCCESS","record":{"typo":1}}`
	body := "echo '" + good + "' >&3\n" +
		// wall time: a real process waits for the reader's first Report
		"while [ ! -e '" + ready + "' ]; do sleep 0.01; done\n" +
		"echo '" + bad + "' >&3\nexit 0\n"
	warn := &warnSignal{warned: make(chan struct{})}
	r, err := wfexec.New(wfexec.Config{
		Handlers: map[string]wfexec.Handler{"t": {Command: script(t, dir, "slow", body)}},
		Logger:   slog.New(warn),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	_, err = r.Run(ctx, runnertest.NewTask(wftype.ModeAsync, "t"),
		&slowReporter{ready: ready, warned: warn.warned, hold: 10 * time.Second})
	require.Error(t, err, "the bad line was never read")
	require.True(t, wftype.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "file descriptor 3: line 2:")
}

// TestEscapedWriterDoesNotHoldTheRun: a child that starts a process out of
// its group (setsid) that writes records without end, then exits, still
// ends its run: the runner reads what the pipes hold for a while after the
// group is gone (TestRecordsReadAfterASlowDrain), but at most DrainLimit,
// then closes them. Without the limit the run waited as long as the pipe
// held unread bytes, which such a writer keeps so when the records are
// read more slowly than it writes them (here a reporter that takes 10 ms a
// record).
func TestEscapedWriterDoesNotHoldTheRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	good := `{"status":"SUCCESS","message":null,"record":{"type":"Feature","properties":{},"stats":{},"system":{}}}`
	writer := script(t, dir, "writer", "echo $$ > '"+pidFile+"'\nexec yes '"+good+"' >&3\n")
	body := "setsid " + strings.Join(writer, " ") + " &\n" +
		// wall time: a real process must have started before its parent exits
		"while [ ! -s '" + pidFile + "' ]; do sleep 0.01; done\nexit 0\n"
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	r, err := wfexec.New(wfexec.Config{
		Handlers:   map[string]wfexec.Handler{"t": {Command: script(t, dir, "escape", body)}},
		Logger:     quietLogger(),
		DrainLimit: 3 * time.Second,
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(t.Context(), runnertest.NewTask(wftype.ModeAsync, "t"), slowRecords{})
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end while an escaped process kept writing records")
	}
}

// slowRecords is a reporter that takes 10 ms a record (wall time: it
// stands for a reporter slower than a writer that never stops).
type slowRecords struct{}

func (slowRecords) Report(context.Context, reporters.Envelope) error {
	time.Sleep(10 * time.Millisecond)
	return nil
}

func (slowRecords) Finish(context.Context) (map[string]any, error) { return nil, nil }
