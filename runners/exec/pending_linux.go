//go:build linux

package exec

import (
	"os"
	"syscall"
	"unsafe"
)

// unread reports how many bytes the pipe whose read end is f holds that
// nobody has read yet (FIONREAD), without changing f's blocking mode; 0
// when it cannot tell.
func unread(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	var n int32
	_ = rc.Control(func(fd uintptr) {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
			n = 0
		}
	})
	return int(n)
}
