//go:build linux

package exec

import (
	"errors"
	"os/exec"
	"syscall"
	"unsafe"
)

// pPID is waitid's P_PID id type: wait for the one process with the given id.
const pPID = 1

// waitLeader blocks until cmd's process has exited but leaves it a zombie
// (waitid with WNOWAIT), so its pid, which is also its process group id,
// cannot be reused until cmd.Wait reaps it. Signalling the group in between
// therefore never reaches an unrelated process. It reports reaped=false; if
// waitid is unavailable it falls back to cmd.Wait and reports reaped=true
// with the error that Wait returned.
func waitLeader(cmd *exec.Cmd) (reaped bool, waitErr error) {
	var siginfo [16]uint64 // siginfo_t is 128 bytes on Linux; its content is not needed
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&siginfo[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errors.Is(errno, syscall.EINTR) {
			continue
		}
		if errno != 0 {
			return true, cmd.Wait()
		}
		return false, nil
	}
}
