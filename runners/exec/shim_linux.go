//go:build linux

package exec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Children die with wf. The handler's command does not run as wf's child
// directly but under a small supervisor, the shim: wf's own executable,
// started with shimEnv set, which this package's init turns into the shim
// before anything else runs. The shim leads the task's process group and
// runs the command in it. It is started with a parent-death signal
// (SysProcAttr.Pdeathsig, SIGTERM): when wf dies in any way, even SIGKILL,
// the kernel signals the shim, which kills the whole group (SIGKILL), so
// neither the command nor anything it started outlives wf. The command
// itself could not be given the signal usefully: it is not inherited by the
// processes the command starts.
//
// The parent-death signal fires when the *thread* that started the child
// exits, and Go's runtime ends threads of its own accord (a goroutine that
// exits while locked to its thread), so the shim is started from a goroutine
// locked to its thread that stays there until the run is over.
const (
	shimEnv       = "WF_EXEC_SHIM"        // "1": this process is a shim
	shimParentEnv = "WF_EXEC_SHIM_PARENT" // the pid of the wf that started it
)

func init() {
	if os.Getenv(shimEnv) == "1" {
		os.Exit(runShim(os.Args[1:]))
	}
}

// shimExecutable is the program that runs the shim: this process's own
// executable ("" when it cannot be found: commands then run directly).
func shimExecutable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

// command returns the command that runs h under the shim (directly when no
// shim can run), its environment env given, and the error of a command that
// cannot be found.
func command(h Handler, env []string) (*exec.Cmd, error) {
	exe := shimExecutable()
	if exe == "" {
		cmd := exec.Command(h.Command[0], h.Command[1:]...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		return cmd, nil
	}
	name := h.Command[0]
	if !strings.Contains(name, "/") {
		// Looked up in wf's PATH, as os/exec would, not in the handler's.
		path, err := exec.LookPath(name)
		if err != nil {
			return nil, err
		}
		name = path
	}
	cmd := exec.Command(exe, append([]string{name}, h.Command[1:]...)...)
	cmd.Env = append(env, shimEnv+"=1", shimParentEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return cmd, nil
}

// startLocked starts cmd from a goroutine locked to its OS thread, which
// stays locked (and so alive) until done is closed: the parent-death signal
// is tied to that thread.
func startLocked(cmd *exec.Cmd, done <-chan struct{}) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-done
		}
	}()
	return <-started
}

// runShim is the shim's main: it runs args in its own process group and
// exits as the command did. A SIGTERM (or SIGHUP, SIGINT) while wf is alive
// is the runner stopping the group, which the command got too: the shim
// keeps waiting for the command. Once wf is gone (the parent-death signal,
// or a parent that is no longer wf), it kills the group.
func runShim(args []string) int {
	parent, _ := strconv.Atoi(os.Getenv(shimParentEnv))
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	orphaned := func() bool { return os.Getppid() != parent }
	if orphaned() { // wf died before the parent-death signal was armed
		killGroup()
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "wf exec shim: no command")
		return 127
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, shimEnv+"=") && !strings.HasPrefix(kv, shimParentEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(recordsFD, "records")}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "error starting command %q: %v\n", args[0], err)
		return 127
	}
	os.Stdin.Close() // the command holds stdin now: wf's writer sees it close when the command does
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for {
		select {
		case <-sigs:
			if orphaned() {
				killGroup()
			}
		case err := <-waited:
			return exitAs(err)
		}
	}
}

// killGroup kills the shim's process group, the shim included.
func killGroup() {
	_ = syscall.Kill(0, syscall.SIGKILL)
	os.Exit(137) // not reached
}

// exitAs returns the command's exit status for the shim to exit with; a
// command killed by a signal is re-raised on the shim, so wf sees the same
// signal.
func exitAs(err error) int {
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		fmt.Fprintf(os.Stderr, "error waiting for the command: %v\n", err)
		return 127
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		signal.Reset(ws.Signal())
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		// A signal whose default is to continue: fall through to a status.
		return 128 + int(ws.Signal())
	}
	return exitErr.ExitCode()
}
