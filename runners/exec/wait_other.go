//go:build !linux

package exec

import "os/exec"

// waitLeader waits for cmd's process and reaps it (reaped=true, with Wait's
// error). Without Linux's waitid WNOWAIT the group is signalled after the
// leader is reaped, which is safe unless its pid is reused in between.
func waitLeader(cmd *exec.Cmd) (reaped bool, waitErr error) {
	return true, cmd.Wait()
}
