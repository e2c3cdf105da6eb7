package doctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Result is what one run block did.
type Result struct {
	Block  Block
	Output string
	Status int
	// Ran is false when the session ended before the block (an earlier
	// block's shell exited).
	Ran bool
}

// prelude starts every session: background blocks in their own process
// groups (set -m), stopped with SIGTERM as a person stops a daemon with
// Ctrl-C, and waited for; `make run` is ./bin/wf run (the test built
// bin/wf, as make run builds it), the one make target a walk-through runs.
const prelude = `set -m
__doctest_bg=()
__doctest_stop() {
  for p in "${__doctest_bg[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
  for p in "${__doctest_bg[@]}"; do wait "$p" 2>/dev/null; done
}
trap __doctest_stop EXIT
make() {
  if [ "${1:-}" = run ]; then shift; ./bin/wf run "$@"; return; fi
  echo "doctest: a walk-through runs make run only (make $*)" >&2
  return 127
}
`

// marker separates the blocks' output; no program prints it.
const marker = "\x1edoctest"

var endRE = regexp.MustCompile(`^` + marker + ` end (\d+) (\d+)$`)

// Script is the one bash session that runs blocks in dir: each run block
// in order, its output between markers; each background block with its
// output in dir/background-N.log.
func Script(blocks []Block) string {
	var s strings.Builder
	s.WriteString(prelude)
	for i, b := range blocks {
		fmt.Fprintf(&s, "\n# block %d (line %d)\n", i, b.Line)
		switch b.Kind {
		case Background:
			fmt.Fprintf(&s, "(\n%s) > background-%d.log 2>&1 &\n__doctest_bg+=($!)\necho $! >> \"$__DOCTEST_PIDS\"\n", b.Script, i)
		default:
			if b.StopBackground {
				s.WriteString("__doctest_stop\n__doctest_bg=()\n")
			}
			fmt.Fprintf(&s, "printf '%s begin %d\\n'\n%s\nprintf '\\n%s end %d %%d\\n' $?\n", marker, i, b.Script, marker, i)
		}
	}
	return s.String()
}

// Execute runs the blocks in one bash session in dir with env (added to this
// process's) and returns what each run block printed and its status. err
// is for a session that could not start or did not end (ctx).
func Execute(ctx context.Context, dir string, env []string, blocks []Block) ([]Result, error) {
	script := filepath.Join(dir, "walkthrough.sh")
	if err := os.WriteFile(script, []byte(Script(blocks)), 0o600); err != nil {
		return nil, fmt.Errorf("error writing the walk-through's script: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", script)
	// A session that does not end in time is killed whole: bash, the
	// process groups of its background blocks (listed in pids) and every
	// other process of its session (bash runs each job in a group of its
	// own, which killing bash alone would leave running).
	pids := filepath.Join(dir, "background.pids")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error {
		if b, err := os.ReadFile(pids); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
		}
		killSession(cmd.Process.Pid)
		return cmd.Process.Kill()
	}
	cmd.WaitDelay = 10 * time.Second // for output pipes a process outside the session may hold
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "__DOCTEST_PIDS="+pids)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("the walk-through did not end: %w; it printed:\n%s", ctx.Err(), out.String())
	}
	results := make([]Result, len(blocks))
	for i, b := range blocks {
		results[i].Block = b
	}
	var cur *Result
	var text strings.Builder
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		bare := strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(bare, marker+" begin "); ok {
			i, err := strconv.Atoi(rest)
			if err != nil || i >= len(results) {
				return nil, fmt.Errorf("error reading the walk-through's output: %q", bare)
			}
			cur = &results[i]
			text.Reset()
			continue
		}
		if m := endRE.FindStringSubmatch(bare); m != nil && cur != nil {
			status, _ := strconv.Atoi(m[2])
			// The end marker starts a line of its own: the newline before
			// it is the script's; trailing newlines are not compared.
			cur.Output, cur.Status, cur.Ran = strings.TrimRight(text.String(), "\n"), status, true
			cur = nil
			continue
		}
		if cur != nil {
			text.WriteString(line)
		}
	}
	if cur != nil { // the shell exited inside a block (an exit in it)
		cur.Output, cur.Status, cur.Ran = text.String(), -1, true
		var exitErr *exec.ExitError
		if errors.As(runErr, &exitErr) {
			cur.Status = exitErr.ExitCode()
		}
	}
	return results, nil
}

// BackgroundLog returns what background block i printed, for a failure's
// message.
func BackgroundLog(dir string, i int) string {
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("background-%d.log", i)))
	if err != nil {
		return ""
	}
	return string(b)
}

// killSession kills, with SIGKILL, every process of the session sid (Linux:
// read from /proc/PID/stat).
func killSession(sid int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == sid {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session …; comm may hold spaces.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 3 && f[3] == strconv.Itoa(sid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
