package cli

import (
	"context"
	"encoding/json"
	"io"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestVersion: wf --version (and -v) names the version, the commit and Go.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--version", "-v"} {
		code, out, errOut := runWF(t, flag)
		require.Equal(t, ExitOK, code, errOut)
		require.Regexp(t, `^wf version \S+ \(commit \S+, `+goruntime.Version()+`\)\n$`, out)
	}
}

// TestUnknownCommand: a command that does not exist is a usage error (exit
// 2) that suggests the nearest one, at every level.
func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tsks"}, `wf: usage: "tsks" is not a wf command; did you mean "tasks"?`},
		{[]string{"enq", "noop"}, `wf: usage: "enq" is not a wf command; did you mean "enqueue"?`},
		{[]string{"tasks", "lsit"}, `wf: usage: "lsit" is not a wf tasks command; did you mean "list"?`},
		{[]string{"catalogs", "collections", "rmove"}, `wf: usage: "rmove" is not a wf catalogs collections command; did you mean "remove"?`},
		{[]string{"frobnicate"}, `wf: usage: "frobnicate" is not a wf command; the commands are validate, `},
	} {
		code, out, errOut := runWF(t, tc.args...)
		require.Equal(t, ExitUsage, code, tc.args)
		require.Empty(t, out, tc.args)
		require.True(t, strings.HasPrefix(errOut, tc.want), "%v: %s", tc.args, errOut)
	}
	// Without a command: the help, and a usage error (a script that ran
	// `wf` alone did nothing).
	for _, args := range [][]string{nil, {"tasks"}} {
		code, out, errOut := runWF(t, args...)
		require.Equal(t, ExitUsage, code, errOut)
		require.Contains(t, out, "USAGE:")
		require.Equal(t, "wf: usage: "+strings.TrimSpace("wf "+strings.Join(args, " "))+" needs a command (listed above)\n", errOut)
	}
}

// TestUnknownFlag: a flag a command does not know is one line naming the
// command's help, exit 2: not the error twice around the whole help.
func TestUnknownFlag(t *testing.T) {
	t.Parallel()
	code, out, errOut := runWF(t, "enqueue", "--bogus", "x")
	require.Equal(t, ExitUsage, code)
	require.Empty(t, out)
	require.Equal(t, "wf: usage: flag provided but not defined: -bogus (see 'wf enqueue --help')\n", errOut)
	code, out, errOut = runWF(t, "tasks", "list", "--limt", "3")
	require.Equal(t, ExitUsage, code)
	require.Empty(t, out)
	require.Equal(t, "wf: usage: flag provided but not defined: -limt (see 'wf tasks list --help')\n", errOut)
}

// TestWaitJSONIsOneDocument: enqueue --wait --format json prints one JSON
// document, the task as it ended.
func TestWaitJSONIsOneDocument(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"noop.yaml": "kind: TaskType\nname: noop\nhandler: {builtin: noop}\n"})
	e.engine()
	code, out, errOut := e.run("enqueue", "--wait", "--format", "json", "noop")
	require.Equal(t, ExitOK, code, errOut)
	dec := json.NewDecoder(strings.NewReader(out))
	var doc struct {
		wftype.Task
		Deduplicated *bool `json:"deduplicated"`
	}
	require.NoError(t, dec.Decode(&doc))
	require.ErrorIs(t, dec.Decode(&json.RawMessage{}), io.EOF, "more than one document: %s", out)
	require.Equal(t, wftype.StatusCompleted, doc.Status)
	require.NotNil(t, doc.Deduplicated)
	require.False(t, *doc.Deduplicated)
}

// TestTaskIDPrefix: tasks show|cancel|requeue take a unique prefix of an
// id, as git does; an ambiguous or unknown prefix is a clear error; flags
// may follow the id.
func TestTaskIDPrefix(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, nil)
	ctx := context.Background()
	st := store.New(dbtest.PoolFor(t, e.url))
	// Two ids of one millisecond share their first 13 characters
	// (xxxxxxxx-xxxx-7), a third is elsewhere.
	now := clock.Now()
	var ids []uuid.UUID
	for _, at := range []time.Time{now, now, now.Add(-time.Hour)} {
		id, err := store.NewIDAt(at)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	var news []store.NewTask
	for _, id := range ids {
		news = append(news, store.NewTask{
			ID: id, SchemaName: wftype.SystemSchema, Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync,
			TaskType: "noop", Inputs: json.RawMessage(`{}`),
		})
	}
	_, err := st.InsertTasks(ctx, news)
	require.NoError(t, err)

	// A unique prefix, with or without dashes, flags after it.
	for _, prefix := range []string{ids[0].String()[:30], strings.ReplaceAll(ids[0].String(), "-", "")[:20]} {
		code, out, errOut := e.run("tasks", "show", prefix, "--format", "json")
		require.Equal(t, ExitOK, code, errOut)
		var got wftype.Task
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		require.Equal(t, ids[0], got.ID)
	}
	code, out, errOut := e.run("tasks", "cancel", ids[2].String()[:16])
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "cancelled task "+ids[2].String()+"\n", out)
	code, out, errOut = e.run("tasks", "requeue", ids[2].String()[:16])
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "requeued task "+ids[2].String())

	// Ambiguous: both candidates named, nothing done.
	shared := ids[0].String()[:13]
	code, _, errOut = e.run("tasks", "cancel", shared)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `task id prefix "`+shared+`" is ambiguous: it starts `)
	require.Contains(t, errOut, ids[0].String())
	require.Contains(t, errOut, ids[1].String())
	for _, id := range ids[:2] {
		got, err := st.GetTask(ctx, id)
		require.NoError(t, err)
		require.Equal(t, wftype.StatusPending, got.Status)
	}

	// Unknown, malformed and misplaced.
	unknown := strings.Repeat("0", 8) + "-0000"
	code, _, errOut = e.run("tasks", "show", unknown)
	require.Equal(t, ExitFailure, code)
	require.Equal(t, "wf: no task id starts with \""+unknown+"\"\n", errOut)
	for _, args := range [][]string{
		{"tasks", "show", "01a"},                   // too short
		{"tasks", "show", "01a2x"},                 // not hex
		{"tasks", "show", "01a2-286d"},             // a dash where ids have none
		{"tasks", "show", ids[0].String(), "more"}, // two arguments
		{"tasks", "show", ids[0].String(), "--nope"},
	} {
		code, _, errOut = e.run(args...)
		require.Equal(t, ExitUsage, code, "%v: %s", args, errOut)
	}
}

// TestNoArgumentsCommands: a command that takes no arguments refuses one as
// a usage error (exit 2) naming the command, before it opens anything.
func TestNoArgumentsCommands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		flags   []string
	}{
		{"run", nil}, {"reload", nil}, {"serve", nil}, {"events list", nil},
		{"webhooks add", []string{"--url", "https://example.com/hook", "--event", "catalog.*"}},
		{"bench burn-down", nil}, {"bench suite", nil}, {"bench chaos", nil},
	} {
		args := append(append(strings.Fields(tc.command), tc.flags...), "extra")
		code, out, errOut := runWF(t, args...)
		require.Equal(t, ExitUsage, code, "%v: %s", args, errOut)
		require.Empty(t, out, args)
		require.Equal(t, "wf: usage: "+tc.command+` takes no arguments, got "extra"`+"\n", errOut, args)
	}
}

// TestEnqueueFriction: an unknown task type names the nearest declared one
// before any database work, and --wait in text prints the outputs the task
// ended with.
func TestEnqueueFriction(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{
		"noop.yaml":  "kind: TaskType\nname: noop\nhandler: {builtin: noop}\n",
		"hello.yaml": "kind: TaskType\nname: hello\nhandler: {exec: {command: [echo, '{\"greeting\":\"hi\"}']}}\n",
	})
	code, out, errOut := e.run("enqueue", "noopp")
	require.Equal(t, ExitFailure, code)
	require.Empty(t, out)
	require.Contains(t, errOut, `unknown task type "noopp" in the specs (`)
	require.Contains(t, errOut, `; did you mean "noop"?`)

	e.engine()
	code, out, errOut = e.run("enqueue", "--wait", "hello")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, " COMPLETED\noutputs: {\"greeting\": \"hi\"}\n")
}

// TestInputReadAsJSONHint: --input message=123 is the number 123; where
// the schema wants a string, the refusal says how to quote it.
func TestInputReadAsJSONHint(t *testing.T) {
	t.Parallel()
	e := newWFEnv(t, map[string]string{"greet.yaml": `kind: TaskType
name: greet
handler: {builtin: noop}
inputs: {type: object, properties: {message: {type: string}}}
`})
	code, _, errOut := e.run("enqueue", "--input", "message=123", "greet")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, `hint: --input message=123 was read as JSON (123); to pass it as text, quote it: --input 'message="123"'`)
	code, _, errOut = e.run("enqueue", "--input", `message="123"`, "greet")
	require.Equal(t, ExitOK, code, errOut)
}
