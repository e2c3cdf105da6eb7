package exec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	wfexec "github.com/wfhq/wf/runners/exec"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

// script writes a sh script to dir and returns the command that runs it.
// Running it through sh (rather than exec'ing the file) avoids ETXTBSY when
// another test forks while the file is still open for writing.
func script(t *testing.T, dir, name, body string) []string {
	t.Helper()
	path := filepath.Join(dir, name+".sh")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return []string{"/bin/sh", path}
}

// quietLogger drops log lines so test output stays readable.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newRunner builds an exec runner with one handler per task type.
func newRunner(t *testing.T, cfg wfexec.Config) *wfexec.Runner {
	t.Helper()
	cfg.Logger = quietLogger()
	r, err := wfexec.New(cfg)
	require.NoError(t, err)
	return r
}

// recordLines returns the suite's records as JSON lines.
func recordLines(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	for _, env := range runnertest.Records() {
		b, err := json.Marshal(env)
		require.NoError(t, err)
		sb.Write(b)
		sb.WriteByte('\n')
	}
	return sb.String()
}

func newSuiteRunner(t *testing.T) runners.Runner {
	t.Helper()
	dir := t.TempDir()
	scripts := map[string]string{
		runnertest.TypeSucceed:       `printf '%s\n' '` + runnertest.SucceedOutputs + `'`,
		runnertest.TypeFailRetryable: "echo 'backend unavailable' >&2\nexit 1",
		runnertest.TypeFailPermanent: "echo 'invalid inputs' >&2\nexit 3",
		runnertest.TypeBlock:         "sleep 1000",
		runnertest.TypeRecords:       "cat >&3 <<'EOF'\n" + recordLines(t) + "EOF",
	}
	handlers := map[string]wfexec.Handler{}
	for taskType, body := range scripts {
		handlers[taskType] = wfexec.Handler{
			Command:   script(t, dir, strings.TrimPrefix(taskType, "runnertest."), body),
			KillGrace: 2 * time.Second,
		}
	}
	return newRunner(t, wfexec.Config{Handlers: handlers})
}

func TestSuite(t *testing.T) {
	t.Parallel()
	runnertest.Run(t, runnertest.Harness{Mode: wftype.ModeAsync, NewRunner: newSuiteRunner})
}

// runOne runs one task of type "t" with the given script.
func runOne(t *testing.T, ctx context.Context, h wfexec.Handler, rep reporters.Reporter) (json.RawMessage, error) {
	t.Helper()
	r := newRunner(t, wfexec.Config{Handlers: map[string]wfexec.Handler{"t": h}})
	return r.Run(ctx, runnertest.NewTask(wftype.ModeAsync, "t"), rep)
}

// requireGone polls until pid no longer exists (ESRCH), with a deadline: a
// killed process lingers as a zombie until its new parent reaps it.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}, 15*time.Second, 20*time.Millisecond, "process %d is still there", pid)
}

// readPID reads the pid a script wrote to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

func TestKillsGroupAtTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	// The child ignores SIGTERM, and so does the grandchild it starts (an
	// ignored signal stays ignored across fork and exec): only SIGKILL to the
	// whole group, after the grace period, ends them.
	cmd := script(t, dir, "stubborn", `trap '' TERM
sleep 1000 &
echo $! > "$PID_FILE"
wait
`)
	const grace = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The run is stopped once the child ignores SIGTERM (it writes the
	// grandchild's pid after its trap): a fixed deadline could strike before
	// the trap is set on a loaded machine, and the child would die at once.
	var stoppedAt atomic.Pointer[time.Time]
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if b, err := os.ReadFile(pidFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
				now := time.Now()
				stoppedAt.Store(&now)
				cancel()
				return
			}
		}
	}()
	_, err := runOne(t, ctx, wfexec.Handler{Command: cmd, Env: map[string]string{"PID_FILE": pidFile}, KillGrace: grace}, reporters.Discard{})
	returned := time.Now()

	require.ErrorIs(t, err, context.Canceled)
	require.False(t, wftype.IsPermanent(err))
	require.NotNil(t, stoppedAt.Load(), "the child never got ready")
	elapsed := returned.Sub(*stoppedAt.Load())
	require.GreaterOrEqual(t, elapsed, grace, "SIGKILL comes only after the grace period")
	require.Less(t, elapsed, grace+10*time.Second)
	requireGone(t, readPID(t, pidFile))
}

func TestKillsLeftoversOnExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "leftover.pid")
	// The child exits at once but leaves a grandchild that holds its stdout.
	cmd := script(t, dir, "leaky", `sleep 1000 &
echo $! > "$PID_FILE"
echo '{"done":true}'
`)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out, err := runOne(t, ctx, wfexec.Handler{Command: cmd, Env: map[string]string{"PID_FILE": pidFile}}, reporters.Discard{})
	require.NoError(t, err)
	require.NoError(t, ctx.Err(), "Run must not wait for the leftover")
	require.JSONEq(t, `{"done":true}`, string(out))
	requireGone(t, readPID(t, pidFile))
}

func TestStdinRoundTrip(t *testing.T) {
	t.Parallel()
	r := newRunner(t, wfexec.Config{Handlers: map[string]wfexec.Handler{
		"t": {Command: []string{"cat"}},
	}})
	task := runnertest.NewTask(wftype.ModeAsync, "t")
	msg := "previous failure"
	task.Error = &msg
	task.Inputs = json.RawMessage(`{"catalog":"roads","big":"` + strings.Repeat("x", 200<<10) + `"}`)
	out, err := r.Run(t.Context(), task, reporters.Discard{})
	require.NoError(t, err)
	var got wftype.Task
	require.NoError(t, json.Unmarshal(out, &got))
	require.Equal(t, *task, got)
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	require.NoError(t, os.Mkdir(work, 0o755))
	cmd := script(t, dir, "env", `printf '{"id":"%s","type":"%s","schema":"%s","attempt":"%s","fd":"%s","custom":"%s","path":"%s","dir":"%s"}' \
  "$WF_TASK_ID" "$WF_TASK_TYPE" "$WF_SCHEMA_NAME" "$WF_ATTEMPT" "$WF_RECORDS_FD" "$CUSTOM" "$PATH" "$(pwd -P)"`)
	r := newRunner(t, wfexec.Config{Handlers: map[string]wfexec.Handler{
		"t": {Command: cmd, Dir: work, Env: map[string]string{"CUSTOM": "hello world", "WF_TASK_ID": "spoofed"}},
	}})
	task := runnertest.NewTask(wftype.ModeAsync, "t")
	task.Attempts = 4
	out, err := r.Run(t.Context(), task, reporters.Discard{})
	require.NoError(t, err)

	var got map[string]string
	require.NoError(t, json.Unmarshal(out, &got))
	wantDir, err := filepath.EvalSymlinks(work)
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"id":      task.ID.String(),
		"type":    "t",
		"schema":  "tenant_a",
		"attempt": "4",
		"fd":      "3",
		"custom":  "hello world",
		"path":    os.Getenv("PATH"),
		"dir":     wantDir,
	}, got)
}

func TestStderrCapturedAndBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := script(t, dir, "noisy", `head -c 204800 /dev/zero | tr '\0' x >&2
echo TAILMARK >&2
echo 'not this' 
exit 1`)
	_, err := runOne(t, t.Context(), wfexec.Handler{Command: cmd}, reporters.Discard{})
	require.Error(t, err)
	require.False(t, wftype.IsPermanent(err))
	require.ErrorContains(t, err, "exit status 1")
	require.ErrorContains(t, err, "stderr: ")
	require.ErrorContains(t, err, "TAILMARK")
	require.NotContains(t, err.Error(), "not this", "stdout is quoted only when stderr is empty")
	require.Less(t, len(err.Error()), wfexec.DefaultExcerptLimit+300)
}

func TestStdoutInErrorWhenNoStderr(t *testing.T) {
	t.Parallel()
	cmd := script(t, t.TempDir(), "quiet", "echo only-stdout\nexit 2")
	_, err := runOne(t, t.Context(), wfexec.Handler{Command: cmd}, reporters.Discard{})
	require.ErrorContains(t, err, "exit status 2; stdout: only-stdout")
	require.False(t, wftype.IsPermanent(err))
}

func TestExitPermanent(t *testing.T) {
	t.Parallel()
	cmd := script(t, t.TempDir(), "bad", "echo 'inputs.catalog is required' >&2\nexit 3")
	_, err := runOne(t, t.Context(), wfexec.Handler{Command: cmd}, reporters.Discard{})
	require.True(t, wftype.IsPermanent(err))
	require.ErrorContains(t, err, "exit status 3; stderr: inputs.catalog is required")

	cmd = script(t, t.TempDir(), "crash", "kill -SEGV $$")
	_, err = runOne(t, t.Context(), wfexec.Handler{Command: cmd}, reporters.Discard{})
	require.False(t, wftype.IsPermanent(err))
	require.ErrorContains(t, err, "signal")
}

func TestOutputs(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		body  string
		limit int
		want  string
	}{
		"JSONObject":   {body: `printf '  {"n": 1}\n\n'`, want: `{"n":1}`},
		"JSONArray":    {body: `echo '[1,2]'`, want: `[1,2]`},
		"Empty":        {body: `true`, want: ``},
		"Null":         {body: `echo null`, want: ``},
		"Text":         {body: `echo 'hello world'`, want: `{"stdout":"hello world\n"}`},
		"TwoValues":    {body: `echo '{}'; echo '{}'`, want: `{"stdout":"{}\n{}\n"}`},
		"JSONTooLarge": {body: `echo '{"a":"0123456789"}'`, limit: 8, want: `{"stdout":"56789\"}\n"}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, wfexec.Config{
				StdoutLimit: tc.limit,
				Handlers:    map[string]wfexec.Handler{"t": {Command: script(t, t.TempDir(), "out", tc.body)}},
			})
			out, err := r.Run(t.Context(), runnertest.NewTask(wftype.ModeAsync, "t"), reporters.Discard{})
			require.NoError(t, err)
			if tc.want == "" {
				require.Nil(t, out)
				return
			}
			require.JSONEq(t, tc.want, string(out))
		})
	}

	t.Run("LargeTextBounded", func(t *testing.T) {
		t.Parallel()
		cmd := script(t, t.TempDir(), "big", `head -c 3000000 /dev/zero | tr '\0' x
echo END`)
		out, err := runOne(t, t.Context(), wfexec.Handler{Command: cmd}, reporters.Discard{})
		require.NoError(t, err)
		var got map[string]string
		require.NoError(t, json.Unmarshal(out, &got))
		require.Len(t, got["stdout"], wfexec.DefaultExcerptLimit)
		require.True(t, strings.HasSuffix(got["stdout"], "xxEND\n"))
	})
}

// TestRecordsMalformed: a malformed record line fails the task permanently,
// naming the line (and the JSON pointer where the envelope schema is
// broken); the good lines before it were reported.
func TestRecordsMalformed(t *testing.T) {
	t.Parallel()
	good := `{"status":"SUCCESS","message":null,"record":{"type":"Feature","properties":{},"stats":{},"system":{}}}`
	for name, tc := range map[string]struct {
		lines     string
		lineLimit int
		want      []string
		reported  int
		// records, when set, are the envelopes reported, in full.
		records []reporters.Envelope
	}{
		// Well-formed JSON that breaks the envelope schema.
		"SchemaInvalid": {lines: recordLines(t) + `{"status":"SUCCESS","message":null,"record":{"type":"Feature","properties":{},"stats":null,"system":{}}}`,
			want: []string{"file descriptor 3: line 4: invalid envelope", `at "/record/stats": expected object, but got null`}, reported: 3, records: runnertest.Records()},
		"UnknownField":  {lines: good + "\n\n" + `{"status":"SUCCESS","bogus":1}`, want: []string{"line 3", `at "": additionalProperties 'bogus' not allowed`}, reported: 1},
		"NestedUnknown": {lines: `{"status":"SUCCESS","record":{"typo":1}}`, want: []string{"line 1", `at "/record": additionalProperties 'typo' not allowed`}},
		"MissingStatus": {lines: good + "\n" + `{"message":"hi"}`, want: []string{"line 2", `at "": missing properties: 'status'`}, reported: 1},
		"BadStatus":     {lines: `{"status":"OK"}`, want: []string{"line 1", `at "/status": value must be one of "SUCCESS", "REJECTED", "FAILED"`}},
		"NotJSON":       {lines: `hello`, want: []string{"line 1", "not valid JSON"}},
		"NotAnObject":   {lines: `[1]`, want: []string{"line 1", `at "": expected object, but got array`}},
		"TwoOnOneLine":  {lines: `{"status":"SUCCESS"} {"status":"SUCCESS"}`, want: []string{"line 1", "one JSON object per line"}},
		"TooLong":       {lines: good + "\n" + `{"status":"SUCCESS","message":"` + strings.Repeat("m", 300) + `"}`, lineLimit: 200, want: []string{"line 2", "longer than 200 bytes"}, reported: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The child keeps running after the bad line; the runner must kill it.
			cmd := script(t, t.TempDir(), "records", "cat >&3 <<'EOF'\n"+tc.lines+"\nEOF\nsleep 1000")
			r := newRunner(t, wfexec.Config{
				RecordLineLimit: tc.lineLimit,
				Handlers:        map[string]wfexec.Handler{"t": {Command: cmd, KillGrace: time.Second}},
			})
			rec := &runnertest.Recorder{}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, err := r.Run(ctx, runnertest.NewTask(wftype.ModeAsync, "t"), rec)
			require.NoError(t, ctx.Err(), "the child must be killed, not waited for")
			require.True(t, wftype.IsPermanent(err), "a malformed line is permanent: %v", err)
			require.ErrorContains(t, err, "file descriptor 3")
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.Len(t, rec.Envelopes(), tc.reported)
			if tc.records != nil {
				runnertest.RequireRecords(t, tc.records, rec.Envelopes())
			}
		})
	}
}

// gateReporter creates a file on the first Report, which the child waits for
// before writing its second record: it proves records are read while the
// child runs, not after it exits.
type gateReporter struct {
	runnertest.Recorder
	gate string
}

func (g *gateReporter) Report(ctx context.Context, env reporters.Envelope) error {
	if err := g.Recorder.Report(ctx, env); err != nil {
		return err
	}
	return os.WriteFile(g.gate, nil, 0o644)
}

func TestRecordsStream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := script(t, dir, "stream", `echo '{"status":"SUCCESS","record":{"type":"Feature","id":"1","properties":{},"stats":{},"system":{}}}' >&3
while [ ! -e "$GATE" ]; do sleep 0.01; done
echo '{"status":"REJECTED","message":"no","record":{"type":"Feature","id":"2","properties":{},"stats":{},"system":{}}}' >&3
`)
	gate := filepath.Join(dir, "gate")
	rep := &gateReporter{gate: gate}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := runOne(t, ctx, wfexec.Handler{Command: cmd, Env: map[string]string{"GATE": gate}}, rep)
	require.NoError(t, err)
	got := rep.Envelopes()
	require.Len(t, got, 2)
	require.Equal(t, "1", got[0].Record.ID)
	require.Equal(t, reporters.RecordRejected, got[1].Status)
}

// failingReporter fails every Report.
type failingReporter struct{ reporters.Discard }

func (failingReporter) Report(context.Context, reporters.Envelope) error {
	return errors.New("database is down")
}

func TestReporterFailureRetryable(t *testing.T) {
	t.Parallel()
	cmd := script(t, t.TempDir(), "rep", `echo '{"status":"SUCCESS","record":{"type":"Feature","properties":{},"stats":{},"system":{}}}' >&3
sleep 1000`)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := runOne(t, ctx, wfexec.Handler{Command: cmd, KillGrace: time.Second}, failingReporter{})
	require.NoError(t, ctx.Err())
	require.ErrorContains(t, err, "line 1")
	require.ErrorContains(t, err, "database is down")
	require.False(t, wftype.IsPermanent(err))
}

func TestStartFailureRetryable(t *testing.T) {
	t.Parallel()
	_, err := runOne(t, t.Context(), wfexec.Handler{Command: []string{filepath.Join(t.TempDir(), "missing")}}, reporters.Discard{})
	require.ErrorContains(t, err, "error starting command")
	require.False(t, wftype.IsPermanent(err))
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := wfexec.New(wfexec.Config{Handlers: map[string]wfexec.Handler{
		"a": {},
		"b": {Command: []string{"true"}, KillGrace: -time.Second},
		"c": {Command: []string{"true"}, Env: map[string]string{"A=B": "x"}},
	}, DrainLimit: -time.Second})
	require.ErrorContains(t, err, `task type "a": the command is empty`)
	require.ErrorContains(t, err, `drain limit is -1s`)
	require.ErrorContains(t, err, `task type "b": kill grace is -1s`)
	require.ErrorContains(t, err, `task type "c": environment variable name "A=B" is invalid`)

	r, err := wfexec.New(wfexec.Config{Handlers: map[string]wfexec.Handler{"a": {Command: []string{"true"}}}})
	require.NoError(t, err)
	require.Equal(t, "exec", r.Name())
	require.Equal(t, 100, r.Priority())
}

func TestExitSnooze(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		script string
		delay  time.Duration
		reason string
	}{
		"Duration":    {script: "echo 90s\necho 'the bucket is rate limited' >&2\nexit 75", delay: 90 * time.Second, reason: "the bucket is rate limited"},
		"Seconds":     {script: "echo 2.5\nexit 75", delay: 2500 * time.Millisecond},
		"Nothing":     {script: "exit 75", delay: wftype.DefaultSnooze},
		"Unreadable":  {script: "echo soon\nexit 75", delay: wftype.DefaultSnooze, reason: `"soon" is neither a duration`},
		"Clamped":     {script: "echo 9999h\nexit 75", delay: wftype.MaxSnoozeDelay},
		"NegativeBad": {script: "echo -5s\nexit 75", delay: wftype.DefaultSnooze, reason: "neither"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := script(t, t.TempDir(), "later", tc.script)
			_, err := runOne(t, t.Context(), wfexec.Handler{Command: cmd}, reporters.Discard{})
			sn, ok := wftype.SnoozeOf(err)
			require.True(t, ok, "a snooze: %v", err)
			require.False(t, wftype.IsPermanent(err))
			require.Equal(t, tc.delay, sn.Delay)
			require.Contains(t, sn.Reason, tc.reason)
		})
	}
}
