package cli

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/spec"
)

// TestEnqueueDelayed: --run-at and --in set when a task first runs; bad or
// conflicting values are usage errors (exit 2) that create nothing.
func TestEnqueueDelayed(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"noop.yaml": "kind: TaskType\nname: noop\nhandler: {builtin: noop}\n"})
	var created struct {
		TaskID string `json:"task_id"`
	}
	runAfter := func(out string) time.Time {
		require.NoError(t, json.Unmarshal([]byte(out), &created), out)
		code, show, errOut := e.run("tasks", "show", "--format", "json", created.TaskID)
		require.Equal(t, ExitOK, code, errOut)
		var task struct {
			Status   string    `json:"status"`
			RunAfter time.Time `json:"run_after"`
		}
		require.NoError(t, json.Unmarshal([]byte(show), &task), show)
		require.Equal(t, "PENDING", task.Status)
		return task.RunAfter
	}

	code, out, errOut := e.run("enqueue", "--format", "json", "--run-at", "2031-05-04T05:02:01+02:00", "noop")
	require.Equal(t, ExitOK, code, errOut)
	require.True(t, time.Date(2031, 5, 4, 3, 2, 1, 0, time.UTC).Equal(runAfter(out)))

	before := clock.Now()
	code, out, errOut = e.run("enqueue", "--format", "json", "--in", "5m", "noop")
	after := clock.Now()
	require.Equal(t, ExitOK, code, errOut)
	got := runAfter(out)
	require.False(t, got.Before(before.Add(5*time.Minute).Truncate(time.Microsecond)), "run_after %s", got)
	require.False(t, got.After(after.Add(5*time.Minute)), "run_after %s", got)

	code, out, errOut = e.run("enqueue", "--in", "90s", "noop")
	require.Equal(t, ExitOK, code, errOut)
	require.Regexp(t, `^created task \S+ \(noop, PENDING\), runs at \S+\n$`, out)

	for args, msg := range map[string][]string{
		"--in: expected a duration such as 90s, 5m or 1h30m": {"--in", "5 minutes"},
		"--in: must not be negative":                         {"--in", "-1m"},
		"--run-at: expected a time in RFC 3339":              {"--run-at", "tomorrow"},
		"give --run-at or --in, not both":                    {"--in", "1m", "--run-at", "2031-05-04T03:02:01Z"},
	} {
		code, _, errOut := e.run(append(append([]string{"enqueue"}, msg...), "noop")...)
		require.Equal(t, ExitUsage, code, errOut)
		require.Contains(t, errOut, args)
	}
	require.Equal(t, 3, e.taskCount(), "a refused enqueue creates nothing")
}

// taskCount is how many tasks wf tasks list shows.
func (e *wfEnv) taskCount() int {
	e.t.Helper()
	code, out, errOut := e.run("tasks", "list", "--format", "json")
	require.Equal(e.t, ExitOK, code, errOut)
	var list struct {
		Tasks []any `json:"tasks"`
	}
	require.NoError(e.t, json.Unmarshal([]byte(out), &list), out)
	return len(list.Tasks)
}

// TestEnqueueFiles: the inputs a task type declares as files (files:) are
// checked when wf enqueue creates the task: a local location outside the
// tenant's folder under files.local_roots is refused, naming the input,
// and creates nothing.
func TestEnqueueFiles(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, fetchSpec("source", "files: [source]\n"))
	for _, source := range []string{"/etc/passwd", "file:///etc/passwd", "../s_x/data.csv", "%2e%2e/s_x/data.csv", e.data + "/files/s_x/data.csv"} {
		code, _, errOut := e.run("enqueue", "-i", "source="+source, "fetch")
		require.Equal(t, ExitFailure, code, "%s: %s", source, errOut)
		require.Contains(t, errOut, "  /source: ", source)
	}
	// A platform task's files are in the folder "system".
	code, _, errOut := e.run("enqueue", "-i", "source=data.csv", "fetch")
	require.Equal(t, ExitOK, code, errOut)
	code, _, errOut = e.run("enqueue", "-i", "source="+e.data+"/files/system/data.csv", "fetch")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, 2, e.taskCount(), "a refused enqueue creates nothing")
}

// TestTasksShowRedacts: wf tasks show and list do not print credentials
// inside URLs of a task's inputs or dedup key.
func TestTasksShowRedacts(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, fetchSpec("url", "dedup_key: 'inputs.url'\n"))
	code, out, errOut := e.run("enqueue", "--format", "json", "-i", "url=https://bob:hunter2@files.example.com/a.csv?token=t0k3n", "fetch")
	require.Equal(t, ExitOK, code, errOut)
	var created struct {
		TaskID string `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &created), out)
	for _, args := range [][]string{
		{"tasks", "show", created.TaskID}, {"tasks", "show", "--format", "json", created.TaskID}, {"tasks", "list", "--format", "json"},
	} {
		code, out, errOut := e.run(args...)
		require.Equal(t, ExitOK, code, errOut)
		require.NotContains(t, out, "hunter2", args)
		require.NotContains(t, out, "t0k3n", args)
	}
	code, out, _ = e.run("tasks", "show", created.TaskID)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "https://bob:REDACTED@files.example.com/a.csv?token=REDACTED")
}

// fetchSpec is the specs folder of a no-op task type "fetch" whose one
// input, a string, is named input; more adds top-level lines to it.
func fetchSpec(input, more string) map[string]string {
	return map[string]string{"fetch.yaml": "kind: TaskType\nname: fetch\nhandler: {builtin: noop}\n" +
		"inputs:\n  type: object\n  properties:\n    " + input + ": {type: string}\n" + more}
}

// TestEnqueueErrorListsInputs: inputs that miss the task type's schema fail
// the command with each problem on a line of its own under the task type.
func TestEnqueueErrorListsInputs(t *testing.T) {
	t.Parallel()
	err := enqueueError(nil, &client.ValidationError{TaskType: "ingest", Inputs: spec.InputErrors{
		{Message: "missing property path"}, {Pointer: "/n", Message: "expected integer"},
	}})
	var exit cli.ExitCoder
	require.True(t, errors.As(err, &exit))
	require.Equal(t, ExitFailure, exit.ExitCode())
	require.Equal(t, "invalid inputs for task type ingest:\n  (root): missing property path\n  /n: expected integer", err.Error())
	require.Equal(t, "boom", enqueueError(nil, errors.New("boom")).Error())
}
