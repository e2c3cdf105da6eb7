// Package proccpu reads the CPU time of processes from Linux's /proc and
// getrusage: a benchmark's own, its waited-for children's, and a process
// tree's (a PostgreSQL server's postmaster and its backends). Busy machines
// stretch wall-clock times; CPU times say what each part of a run cost.
package proccpu

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Usage is CPU time and peak memory from getrusage.
type Usage struct {
	User, Sys time.Duration
	// MaxRSSKB is the peak resident memory in KiB.
	MaxRSSKB int64
}

// CPU is User + Sys.
func (u Usage) CPU() time.Duration { return u.User + u.Sys }

func rusage(who int) Usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return Usage{}
	}
	return Usage{
		User:     time.Duration(ru.Utime.Nano()),
		Sys:      time.Duration(ru.Stime.Nano()),
		MaxRSSKB: ru.Maxrss, // kilobytes on Linux
	}
}

// Self returns this process's usage.
func Self() Usage { return rusage(syscall.RUSAGE_SELF) }

// Children returns the usage of this process's children that exited and
// were waited for.
func Children() Usage { return rusage(syscall.RUSAGE_CHILDREN) }

// clockTicks is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTicks = 100

// TreeCPU returns the CPU time of a process and its live children, plus
// what its exited children used (PostgreSQL backends that ended): the
// server's whole cost when pid is the postmaster. It is 0 when pid is not
// a process of this machine.
func TreeCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	var ticks int64
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		p, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		st, ok := readStat(p)
		if !ok {
			continue
		}
		switch {
		case p == pid:
			ticks += st.utime + st.stime + st.cutime + st.cstime
		case st.ppid == pid:
			ticks += st.utime + st.stime
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// Parent returns the parent process id of pid, 0 when it cannot be read.
func Parent(pid int) int {
	st, _ := readStat(pid)
	return st.ppid
}

type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	// The command name may hold spaces: fields start after its closing ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, false
	}
	num := func(k int) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
	return procStat{ppid: int(num(1)), utime: num(11), stime: num(12), cutime: num(13), cstime: num(14)}, true
}
