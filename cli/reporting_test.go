package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/wftype"
)

// envelopeLines returns envelope(from)…envelope(to) as NDJSON lines.
func envelopeLines(t *testing.T, from, to int) string {
	t.Helper()
	var sb strings.Builder
	for i := from; i <= to; i++ {
		b, err := json.Marshal(envelope(i))
		require.NoError(t, err)
		sb.Write(b)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// gatedScript is a shell handler that writes records 1-3 to file descriptor
// 3 ($WF_RECORDS_FD), waits for the file $GATE, writes records 4-5, and
// prints its outputs, which say which claim it ran under.
func gatedScript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gated.sh")
	body := "cat >&3 <<'EOF'\n" + envelopeLines(t, 1, 3) + "EOF\n" +
		"while [ ! -e \"$GATE\" ]; do sleep 0.02; done\n" +
		"cat >&3 <<'EOF'\n" + envelopeLines(t, 4, 5) + "EOF\n" +
		`printf '{"emitted": 5, "owner": "%s"}\n' "$WF_OWNER_ID"` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// execTaskType is a task type run by `sh script` with GATE set, reporting
// to the database and a detailed report.
func execTaskType(name, script, gate string, maxRetries int) string {
	return fmt.Sprintf(`kind: TaskType
name: %s
description: A shell handler that reports records on file descriptor 3.
handler:
  exec:
    command: ["sh", %q]
    env: {GATE: %q}
reporters: [database, gcs_detailed]
visibility_timeout: 5s
max_retries: %d
backoff: {base: 100ms, factor: 1, max: 1s}
inputs: {type: object}
`, name, script, gate, maxRetries)
}

// requireLiveThenComplete checks the run of task id shows live progress
// (three records while it waits for gate, still ACTIVE), then, with the gate
// open, completes with a report of all five records and outputs that count
// them (emitted). It returns the ended task and its outputs.
func requireLiveThenComplete(t *testing.T, e *wfEnv, id uuid.UUID, gate string) (wftype.Task, map[string]any) {
	t.Helper()
	live := e.waitProgress(id, 3)
	require.Equal(t, wftype.StatusActive, live.Status, "progress is visible while the task runs")
	var p map[string]any
	require.NoError(t, json.Unmarshal(live.Progress, &p))
	require.Equal(t, float64(2), p["succeeded"])
	require.Equal(t, float64(1), p["rejected"])
	openGate(t, gate)
	done := e.waitEnded(id)
	require.Equal(t, wftype.StatusCompleted, done.Status, "error: %s", deref(done.Error))
	requireEnvelopes(t, 5, readReport(t, done))
	var final map[string]any
	require.NoError(t, json.Unmarshal(done.Progress, &final))
	require.Equal(t, float64(5), final["total"])
	var out map[string]any
	require.NoError(t, json.Unmarshal(done.Outputs, &out))
	require.Equal(t, float64(5), out["emitted"])
	return done, out
}

// TestRunReportsFromGoHandler: `wf run` gives a builtin handler the
// reporters of its spec: live progress, then a complete NDJSON report whose
// URL is in the outputs.
func TestRunReportsFromGoHandler(t *testing.T) {
	t.Parallel()
	e := newExecEnv(t)
	e.engine()
	gate := filepath.Join(t.TempDir(), "gate")
	id := e.enqueue("emit", map[string]any{"first": 3, "then": 2, "gate": gate})
	requireLiveThenComplete(t, e, id, gate)
	require.DirExists(t, filepath.Join(e.data, "files"), "wf run creates <data_dir>/files, the default files.local_roots")
}

// TestRunReportsFromExecChild: the same from a shell child writing
// envelopes to file descriptor 3.
func TestRunReportsFromExecChild(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	e := newWFEnv(t, map[string]string{"shell.yaml": execTaskType("shell_records", gatedScript(t), gate, 1)})
	e.engine()
	id := e.enqueue("shell_records", map[string]any{})
	_, out := requireLiveThenComplete(t, e, id, gate)
	require.Equal(t, "", out["owner"], "ran by the local exec runner, not a remote worker")
}

// pythonChild writes two good envelopes and a malformed third one, then
// would run on: the runner must stop it and fail the task naming the line.
const pythonChild = `import json, os, sys, time
task = json.load(sys.stdin)
with os.fdopen(int(os.environ["WF_RECORDS_FD"]), "w") as records:
    for i in (1, 2):
        records.write(json.dumps({"status": "SUCCESS", "message": None, "record": {
            "type": "Feature", "id": "%s-%d" % (task["task_id"], i),
            "properties": {"n": i}, "stats": {}, "system": {}}}) + "\n")
    records.write(json.dumps({"status": "SUCCESS", "record": {"type": "Feature", "properties": {}, "stats": {}}}) + "\n")
    records.flush()
    time.sleep(600)
`

// TestRunExecChildMalformedRecord: a child in another language (Python, or
// sh where Python is missing) writes a malformed record on line 3; the task
// fails at once (FAILED, not retried) with an error naming the line and
// what is wrong, and the two good records were counted.
func TestRunExecChildMalformedRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	command := `["sh", "` + filepath.Join(dir, "child.sh") + `"]`
	good := envelopeLines(t, 1, 2)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "child.sh"), []byte("cat >&3 <<'EOF'\n"+good+
		`{"status":"SUCCESS","record":{"type":"Feature","properties":{},"stats":{}}}`+"\nEOF\nsleep 600\n"), 0o644))
	if py, err := exec.LookPath("python3"); err == nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "child.py"), []byte(pythonChild), 0o644))
		command = fmt.Sprintf(`[%q, %q]`, py, filepath.Join(dir, "child.py"))
	}
	e := newWFEnv(t, map[string]string{"child.yaml": `kind: TaskType
name: child
description: A child that writes one malformed record.
handler:
  exec:
    command: ` + command + `
reporters: [database, gcs_detailed]
max_retries: 3
visibility_timeout: 5s
`})
	e.engine()
	id := e.enqueue("child", map[string]any{})
	done := e.waitEnded(id)
	require.Equal(t, wftype.StatusFailed, done.Status, "a malformed record is a permanent failure")
	require.Equal(t, 0, done.RetryCount)
	require.Contains(t, deref(done.Error), "error reading records from file descriptor 3: line 3: invalid envelope")
	require.Contains(t, deref(done.Error), `at "/record": missing properties: 'system'`)
	var p map[string]any
	require.NoError(t, json.Unmarshal(done.Progress, &p))
	require.Equal(t, float64(2), p["total"], "the good records before the bad line were counted")
}
