package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
)

// openPTY opens a pseudo-terminal: its master, and its slave to give a
// process as its controlling terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	require.NoError(t, err)
	// Through the raw connection, not Fd(), which would make reads block
	// in the kernel, and so delay Close until one returns.
	rc, err := master.SyscallConn()
	require.NoError(t, err)
	var n uint32
	var unlock int32
	var errno syscall.Errno
	require.NoError(t, rc.Control(func(fd uintptr) {
		if _, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno == 0 {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock)))
		}
	}))
	require.Zero(t, errno)
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	return master, slave
}

// TestSIGHUPInATerminal: a wf run started in a terminal reloads its specs
// on `kill -HUP` while the terminal is there, and stops, exit 0, as with
// Ctrl-C, when the terminal goes away (the kernel's SIGHUP).
func TestSIGHUPInATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	e := newWFEnv(t, map[string]string{"noop.yaml": noopSpec})
	master, slave := openPTY(t)
	cmd := exec.Command(buildWF(t), "--config", e.config, "run", "--listen", "127.0.0.1:0",
		"--poll-interval", "200ms", "--heartbeat-interval", "1s", "--grace", "5s")
	logPath := filepath.Join(t.TempDir(), "wf-run.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	require.NoError(t, slave.Close())
	var mu sync.Mutex
	var out bytes.Buffer
	go func() { // the terminal's screen: read, so writes never block
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			mu.Lock()
			t.Logf("terminal:\n%s", out.String())
			mu.Unlock()
			b, _ := os.ReadFile(logPath)
			t.Logf("log:\n%s", b)
		}
	})
	st := store.New(dbtest.PoolFor(t, e.url))
	waitUntil(t, "served noop", func() bool { return len(unserved(t, st, "noop")) == 0 })

	require.NoError(t, os.WriteFile(filepath.Join(e.specs, "greet.yaml"), []byte(greetSpec), 0o644))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	waitUntil(t, "served greet", func() bool { return len(unserved(t, st, "greet")) == 0 })

	require.NoError(t, master.Close()) // the terminal goes away
	select {
	case <-exited:
		require.NoError(t, waitErr, "wf run stopped as on Ctrl-C: exit 0")
	case <-time.After(60 * time.Second):
		t.Fatal("wf run did not stop when its terminal went away")
	}
}
