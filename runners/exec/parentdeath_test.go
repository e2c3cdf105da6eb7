package exec_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	wfexec "github.com/wfhq/wf/runners/exec"
)

// parentDirEnv makes the test binary, re-executed, play a wf instance that
// runs one exec task (TestHelperWFParent).
const parentDirEnv = "WF_TEST_EXEC_PARENT_DIR"

// TestHelperWFParent is not a test of its own: run by
// TestChildrenDieWithWF in a subprocess, it runs one task whose command
// starts a grandchild, and blocks until it is killed.
func TestHelperWFParent(t *testing.T) {
	dir := os.Getenv(parentDirEnv)
	if dir == "" {
		t.Skip("only run as TestChildrenDieWithWF's subprocess")
	}
	cmd := script(t, dir, "worker", `echo $$ > "$DIR/child.tmp" && mv "$DIR/child.tmp" "$DIR/child.pid"
sleep 1000 &
echo $! > "$DIR/grandchild.tmp" && mv "$DIR/grandchild.tmp" "$DIR/grandchild.pid"
wait
`)
	_, err := runOne(t, context.Background(), wfexec.Handler{Command: cmd, Env: map[string]string{"DIR": dir}}, reporters.Discard{})
	t.Fatalf("the task ended while its parent should have been killed: %v", err)
}

// wfParent is a wf-like process (this test binary, re-executed) running one
// exec task, and the pids of the task's command and of its child.
type wfParent struct {
	cmd               *exec.Cmd
	waited            chan error
	child, grandchild int
}

// startWFParent starts a wf-like process and waits until its task runs.
func startWFParent(t *testing.T) *wfParent {
	t.Helper()
	dir := t.TempDir()
	p := &wfParent{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperWFParent$", "-test.count=1"), waited: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), parentDirEnv+"="+dir)
	require.NoError(t, p.cmd.Start())
	go func() { p.waited <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	require.Eventually(t, func() bool {
		if _, err := os.Stat(filepath.Join(dir, "grandchild.pid")); err != nil {
			return false
		}
		p.child, p.grandchild = readPID(t, filepath.Join(dir, "child.pid")), readPID(t, filepath.Join(dir, "grandchild.pid"))
		return true
	}, 30*time.Second, 10*time.Millisecond, "the task never started")
	require.NoError(t, syscall.Kill(p.child, 0), "the command runs")
	require.NoError(t, syscall.Kill(p.grandchild, 0), "its child runs")
	return p
}

// kill kills the wf-like process with SIGKILL and waits for it to die.
func (p *wfParent) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-p.waited:
	case <-time.After(30 * time.Second):
		t.Fatal("the parent did not die")
	}
}

// TestChildrenDieWithWF: two wf processes each run an exec task whose
// command starts a process of its own; one is killed with SIGKILL, which it
// cannot catch. Neither its command nor the command's child may outlive it:
// a task whose lease then expires runs elsewhere, and an orphan still
// working on it would run it twice at once. The other instance's children
// are not its to kill: they keep running until their own wf dies.
func TestChildrenDieWithWF(t *testing.T) {
	t.Parallel()
	a, b := startWFParent(t), startWFParent(t)
	a.kill(t)
	requireGone(t, a.child)
	requireGone(t, a.grandchild)
	require.NoError(t, syscall.Kill(b.child, 0), "another instance's command still runs")
	require.NoError(t, syscall.Kill(b.grandchild, 0), "and so does its child")
	b.kill(t)
	requireGone(t, b.child)
	requireGone(t, b.grandchild)
}
