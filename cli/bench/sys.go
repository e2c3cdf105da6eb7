package bench

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage is CPU time and peak memory from getrusage.
type usage struct {
	user, sys time.Duration
	maxRSSKB  int64
}

func rusage(who int) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return usage{}
	}
	return usage{
		user:     time.Duration(ru.Utime.Nano()),
		sys:      time.Duration(ru.Stime.Nano()),
		maxRSSKB: ru.Maxrss, // kilobytes on Linux
	}
}

// selfUsage and childrenUsage read the bench process and its waited-for
// children (the `wf run` instances once they exited).
func selfUsage() usage     { return rusage(syscall.RUSAGE_SELF) }
func childrenUsage() usage { return rusage(syscall.RUSAGE_CHILDREN) }

// clockTicks is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTicks = 100

// machineCPU returns the busy and total CPU time of the whole machine from
// /proc/stat, in clock ticks.
func machineCPU() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0
	}
	for i, s := range f[1:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}

// processTreeCPU returns the CPU time of a process and its live children,
// plus what its exited children used (PostgreSQL backends that ended): the
// server's whole cost when pid is the postmaster.
func processTreeCPU(pid int) time.Duration {
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

// processRSS returns a process's resident and peak resident memory in KiB
// (VmRSS and VmHWM of /proc/<pid>/status).
func processRSS(pid int) (rssKB, peakKB int64) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rssKB = n
		case "VmHWM":
			peakKB = n
		}
	}
	return rssKB, peakKB
}

// describeMachine reads the CPU count and model, the memory and the kernel.
func describeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, "MemTotal:")), " kB"), 10, 64)
				m.MemoryMB = kb / 1024
			}
		}
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		m.Kernel = utsString(u.Release[:])
	}
	return m
}

func utsString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
