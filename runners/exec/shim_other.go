//go:build !linux

package exec

import (
	"os/exec"
	"syscall"
)

// command returns the command that runs h directly: without Linux's
// parent-death signal there is no shim, and a child outlives a wf that is
// killed (SIGKILL); its results are refused all the same, as its lease ends.
func command(h Handler, env []string) (*exec.Cmd, error) {
	cmd := exec.Command(h.Command[0], h.Command[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, nil
}

// startLocked starts cmd.
func startLocked(cmd *exec.Cmd, _ <-chan struct{}) error { return cmd.Start() }
