package doctest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const page = "# A page\n\n" +
	"```sh doctest\nX=1\necho one $X\n```\n" +
	"```text doctest-output\none 1\n```\n\n" +
	"```sh\necho not marked\n```\n\n" +
	"```sh doctest-background\nsleep 30\n```\n\n" +
	"```sh doctest exit=3\necho two $X >&2\n(exit 3)\n```\n"

// TestParse: marked blocks in order, with their output, status and line;
// unmarked ones left.
func TestParse(t *testing.T) {
	t.Parallel()
	blocks, err := Parse([]byte(page))
	require.NoError(t, err)
	require.Len(t, blocks, 3)
	require.Equal(t, Run, blocks[0].Kind)
	require.Equal(t, 3, blocks[0].Line)
	require.Equal(t, "X=1\necho one $X\n", blocks[0].Script)
	require.Equal(t, "one 1\n", *blocks[0].Output)
	require.Equal(t, Background, blocks[1].Kind)
	require.Equal(t, 3, blocks[2].WantStatus)
	require.Nil(t, blocks[2].Output)
}

// TestParseRefuses: malformed markers name their line.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ page, want string }{
		{"```text doctest-output\nx\n```\n", "line 1: a doctest-output block must follow a doctest block"},
		{"```sh doctest\nx\n```\n\nprose\n```text doctest-output\nx\n```\n", "line 6: a doctest-output block must follow"},
		{"```sh doctest exit=x\nx\n```\n", `line 1: "exit=x": exit=N follows doctest`},
		{"```sh doctest\nx\n", "line 1: the fence is never closed"},
	} {
		_, err := Parse([]byte(tc.page))
		require.ErrorContains(t, err, tc.want, tc.page)
	}
}

// TestMatch: lines, "..." for any lines, "…" for any text.
func TestMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb\n", "a  \nb\n\n", true},
		{"created task … (noop, PENDING)", "created task 01a2-33 (noop, PENDING)", true},
		{"first\n...\nlast", "first\nx\ny\nlast", true},
		{"first\n...\nlast", "first\nlast", true},
		{"a\nb", "a\nc", false},
		{"a", "a\nmore", false},
		{"(noop)", "(noop) x", false},
	} {
		ok, reason := Match(tc.want, tc.got)
		require.Equal(t, tc.ok, ok, "%q vs %q: %s", tc.want, tc.got, reason)
	}
	_, reason := Match("a\nb\nc", "a\nb\nx")
	require.Equal(t, `want line 3 "c" not found after the 2 lines matched so far`, reason)
}

// TestExecute: one session (a variable carries over), output and status per
// block, stderr with stdout, a background block stopped at the end.
func TestExecute(t *testing.T) {
	t.Parallel()
	blocks, err := Parse([]byte(page))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	res, err := Execute(ctx, t.TempDir(), nil, blocks)
	require.NoError(t, err)
	require.Less(t, time.Since(began), 25*time.Second, "the background sleep was stopped, not waited out")
	require.True(t, res[0].Ran)
	require.Equal(t, "one 1", res[0].Output)
	require.Equal(t, 0, res[0].Status)
	require.False(t, res[1].Ran, "background blocks have no result")
	require.Equal(t, "two 1", res[2].Output)
	require.Equal(t, 3, res[2].Status)
	require.True(t, strings.HasPrefix(Script(blocks), prelude))
}

// TestStopBackground: a block marked stop-background stops the background
// blocks started before it (SIGTERM, waited for) before it runs, as a
// reader's Ctrl-C in the other terminal; a later background block runs on.
func TestStopBackground(t *testing.T) {
	t.Parallel()
	page := "```sh doctest-background\ntrap 'echo stopped > first.txt; exit 0' TERM\ntouch ready\nwhile :; do sleep 0.1; done\n```\n\n" +
		"```sh doctest\nuntil [ -e ready ]; do sleep 0.1; done\n```\n\n" +
		"```sh doctest stop-background\ncat first.txt\n```\n" +
		"```text doctest-output\nstopped\n```\n\n" +
		"```sh doctest-background\necho second > second.txt; sleep 30\n```\n\n" +
		"```sh doctest\nuntil [ -s second.txt ]; do sleep 0.1; done; cat second.txt\n```\n"
	blocks, err := Parse([]byte(page))
	require.NoError(t, err)
	require.True(t, blocks[2].StopBackground)
	require.False(t, blocks[1].StopBackground)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Execute(ctx, t.TempDir(), nil, blocks)
	require.NoError(t, err)
	require.Equal(t, 0, res[2].Status)
	ok, reason := Match(*blocks[2].Output, res[2].Output)
	require.True(t, ok, reason)
	require.Equal(t, "second", res[4].Output, "a background block after the stop runs")

	_, err = Parse([]byte("```sh doctest-background stop-background\nx\n```\n"))
	require.ErrorContains(t, err, "line 1: stop-background follows doctest")
}

// TestTimeoutStopsBackground: a session that does not end in time fails
// with the context's error, and its background blocks are stopped with it
// (a daemon left running would outlive the test).
func TestTimeoutStopsBackground(t *testing.T) {
	t.Parallel()
	page := "```sh doctest-background\nexec sh -c 'echo $$ > bg.pid; exec sleep 300'\n```\n\n" +
		"```sh doctest\nuntil [ -s bg.pid ]; do sleep 0.1; done; sh -c 'echo $$ > fg.pid; touch ready; exec sleep 300'\n```\n"
	blocks, err := Parse([]byte(page))
	require.NoError(t, err)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond) // polls a file the shell writes
		}
	}()
	_, err = Execute(ctx, dir, nil, blocks)
	require.ErrorContains(t, err, "the walk-through did not end")
	for _, name := range []string{"bg.pid", "fg.pid"} {
		var raw []byte
		require.Eventually(t, func() bool {
			raw, err = os.ReadFile(filepath.Join(dir, name))
			return err == nil && len(raw) > 0
		}, time.Minute, 50*time.Millisecond, "%s was written", name)
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			return syscall.Kill(pid, 0) == syscall.ESRCH
		}, time.Minute, 50*time.Millisecond, "the process %d of %s still runs", pid, name)
	}
}
