package bench

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wfhq/wf/internal/proccpu"
)

// usage is CPU time and peak memory from getrusage.
type usage = proccpu.Usage

// selfUsage and childrenUsage read the bench process and its waited-for
// children (the `wf run` instances once they exited).
func selfUsage() usage     { return proccpu.Self() }
func childrenUsage() usage { return proccpu.Children() }

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

// processTreeCPU returns the CPU time of a process and its children, live
// and exited: the server's whole cost when pid is the postmaster.
func processTreeCPU(pid int) time.Duration { return proccpu.TreeCPU(pid) }

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
