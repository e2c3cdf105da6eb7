package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

const (
	noopSpec   = "kind: TaskType\nname: noop\nhandler: {builtin: noop}\n"
	greetSpec  = "kind: TaskType\nname: greet\nhandler: {builtin: noop}\n"
	helloSpec  = "kind: TaskType\nname: hello\nhandler: {builtin: noop}\n"
	brokenSpec = "kind: TaskType\nname: broken\nhandler: {builtin: no_such_handler}\n"
	// brokenAt is where wf says brokenSpec is wrong: file:line:column.
	brokenAt = "broken.yaml:3:20"
)

// daemon is a real `wf run` process of a test's installation.
type daemon struct {
	cmd *exec.Cmd
	log string // its stderr and stdout
}

// startDaemon starts `wf run` (the built binary) on e's installation until
// the test ends.
func startDaemon(t *testing.T, e *wfEnv) *daemon {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	d := &daemon{log: filepath.Join(t.TempDir(), "wf-run.log")}
	logFile, err := os.Create(d.log)
	require.NoError(t, err)
	d.cmd = exec.Command(buildWF(t), "--config", e.config, "run", "--listen", "127.0.0.1:0",
		"--poll-interval", "200ms", "--heartbeat-interval", "1s", "--grace", "5s")
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	require.NoError(t, d.cmd.Start())
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		_, _ = d.cmd.Process.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(d.log)
			t.Logf("wf run log:\n%s", b)
		}
	})
	return d
}

// waitUntil polls cond (real processes do the work) until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never %s", what)
		}
		time.Sleep(50 * time.Millisecond) // wall time: polling what another process does
	}
}

// unserved returns which of types no live instance serves.
func unserved(t *testing.T, st *store.Store, types ...string) []string {
	t.Helper()
	got, err := st.UnservedTaskTypes(t.Context(), types)
	require.NoError(t, err)
	return got
}

// enqueueWarned enqueues one task of taskType and returns its id and what
// wf wrote on stderr.
func enqueueWarned(t *testing.T, e *wfEnv, taskType string) (uuid.UUID, string) {
	t.Helper()
	code, out, errOut := e.run("enqueue", "--format", "json", taskType)
	require.Equal(t, ExitOK, code, errOut)
	var got struct {
		TaskID uuid.UUID `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	return got.TaskID, errOut
}

// TestReloadOnSIGHUP: a running `wf run` does not know a task type whose
// spec file appears after it started: `wf enqueue` warns (and still
// enqueues), and the task waits with waiting_reason not_served. After a
// SIGHUP the daemon serves the new type and runs the task. A bad spec and
// a SIGHUP keep the old types served, and the log names the error's
// file:line:column.
func TestReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"noop.yaml": noopSpec})
	d := startDaemon(t, e)
	st := store.New(dbtest.PoolFor(t, e.url))
	waitUntil(t, "served noop", func() bool { return len(unserved(t, st, "noop")) == 0 })

	require.NoError(t, os.WriteFile(filepath.Join(e.specs, "greet.yaml"), []byte(greetSpec), 0o644))
	id, warning := enqueueWarned(t, e, "greet")
	require.Contains(t, warning, "wf: warning: no running wf instance serves task type greet")
	task, err := st.GetTask(t.Context(), id)
	require.NoError(t, err)
	reasons, err := st.WaitingReasons(t.Context(), []wftype.Task{task}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, store.WaitingNotServed, reasons[id])
	_, warning = enqueueWarned(t, e, "noop")
	require.Empty(t, warning, "noop is served")

	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	require.Equal(t, wftype.StatusCompleted, e.waitEnded(id).Status)
	_, warning = enqueueWarned(t, e, "greet")
	require.Empty(t, warning, "greet is served after the reload")

	// A bad spec: the reload is refused, the old set keeps running.
	require.NoError(t, os.WriteFile(filepath.Join(e.specs, "broken.yaml"), []byte(brokenSpec), 0o644))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	waitUntil(t, "logged the refused reload", func() bool {
		b, _ := os.ReadFile(d.log)
		return strings.Contains(string(b), "specs not reloaded") && strings.Contains(string(b), brokenAt)
	})
	require.Empty(t, unserved(t, st, "noop", "greet"))
	require.NoError(t, os.Remove(filepath.Join(e.specs, "broken.yaml")))
	again, _ := enqueueWarned(t, e, "greet")
	require.Equal(t, wftype.StatusCompleted, e.waitEnded(again).Status)
	require.NoError(t, d.cmd.Process.Signal(syscall.Signal(0)), "wf run still runs")
}

// TestReloadCommand: `wf reload` asks every running instance, through the
// database, to reload its specs, and prints each one's outcome: the task
// types it serves now, or why it kept its old specs (exit 1), with the
// error's file:line:column. With no instance running it says so (exit 1).
func TestReloadCommand(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"noop.yaml": noopSpec})
	code, _, errOut := e.run("reload")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `no wf run instance of service "wf" is running`)

	startDaemon(t, e)
	startDaemon(t, e)
	st := store.New(dbtest.PoolFor(t, e.url))
	waitUntil(t, "two instances serve noop", func() bool {
		in, err := st.ServingInstances(t.Context(), "wf")
		require.NoError(t, err)
		return len(in) == 2 && !in[0].Legacy && !in[1].Legacy && len(unserved(t, st, "noop")) == 0
	})

	require.NoError(t, os.WriteFile(filepath.Join(e.specs, "hello.yaml"), []byte(helloSpec), 0o644))
	require.Equal(t, []string{"hello"}, unserved(t, st, "noop", "hello"))
	code, out, errOut := e.run("reload")
	require.Equal(t, ExitOK, code, out+errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	for _, l := range lines {
		require.Contains(t, l, ": reloaded: serves 2 task types (hello, noop)")
	}
	require.Empty(t, unserved(t, st, "noop", "hello"), "wf reload answers once the new types are served")
	id, warning := enqueueWarned(t, e, "hello")
	require.Empty(t, warning)
	require.Equal(t, wftype.StatusCompleted, e.waitEnded(id).Status)

	require.NoError(t, os.WriteFile(filepath.Join(e.specs, "broken.yaml"), []byte(brokenSpec), 0o644))
	code, out, _ = e.run("reload")
	require.Equal(t, ExitFailure, code)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	for _, l := range lines {
		require.Contains(t, l, ": kept its old specs: ")
		require.Contains(t, l, brokenAt)
	}
	require.Empty(t, unserved(t, st, "noop", "hello"), "the old specs keep running")
}
