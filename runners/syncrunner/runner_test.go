package syncrunner_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/runners/syncrunner"
	"github.com/wfhq/wf/wftype"
)

func TestSuite(t *testing.T) {
	t.Parallel()
	runnertest.Run(t, runnertest.Harness{
		Mode:      wftype.ModeSync,
		NewRunner: func(t *testing.T) runners.Runner { return syncrunner.New(runnertest.NewBuiltin(t)) },
	})
}

// fakeRunner handles ASYNCHRONOUS tasks of the types it lists and returns its
// name as outputs.
type fakeRunner struct {
	name     string
	priority int
	types    []string
}

func (f fakeRunner) Name() string  { return f.name }
func (f fakeRunner) Priority() int { return f.priority }
func (f fakeRunner) CanHandle(mode wftype.ExecutionMode, taskType string) bool {
	for _, tt := range f.types {
		if tt == taskType && mode == wftype.ModeAsync {
			return true
		}
	}
	return false
}

func (f fakeRunner) Run(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
	return json.Marshal(f.name)
}

func TestDelegation(t *testing.T) {
	t.Parallel()
	slow := fakeRunner{name: "slow", priority: 100, types: []string{"a", "b"}}
	fast := fakeRunner{name: "fast", priority: 10, types: []string{"a"}}
	r := syncrunner.New(slow, fast)

	require.True(t, r.CanHandle(wftype.ModeSync, "a"))
	require.True(t, r.CanHandle(wftype.ModeSync, "b"))
	require.False(t, r.CanHandle(wftype.ModeAsync, "a"), "the sync runner never takes background work")
	require.False(t, r.CanHandle(wftype.ModeSync, "c"))

	out, err := r.Run(t.Context(), runnertest.NewTask(wftype.ModeSync, "a"), reporters.Discard{})
	require.NoError(t, err)
	require.JSONEq(t, `"fast"`, string(out), "the lower priority number wins")

	out, err = r.Run(t.Context(), runnertest.NewTask(wftype.ModeSync, "b"), reporters.Discard{})
	require.NoError(t, err)
	require.JSONEq(t, `"slow"`, string(out))

	_, err = r.Run(t.Context(), runnertest.NewTask(wftype.ModeSync, "c"), reporters.Discard{})
	require.ErrorContains(t, err, `no runner can handle task type "c"`)
	require.True(t, wftype.IsPermanent(err))

	require.False(t, syncrunner.New().CanHandle(wftype.ModeSync, "a"))
}

func TestCapabilityMap(t *testing.T) {
	t.Parallel()
	b := runnertest.NewBuiltin(t)
	all := []runners.Runner{syncrunner.New(b), b}
	m := runners.BuildCapabilityMap(all, []runners.Pair{
		{Mode: wftype.ModeAsync, TaskType: runnertest.TypeSucceed},
		{Mode: wftype.ModeSync, TaskType: runnertest.TypeSucceed},
		{Mode: wftype.ModeSync, TaskType: "unknown"},
	})
	require.Len(t, m, 2)
	require.Equal(t, "builtin", m[runners.Pair{Mode: wftype.ModeAsync, TaskType: runnertest.TypeSucceed}].Name())
	require.Equal(t, "sync", m[runners.Pair{Mode: wftype.ModeSync, TaskType: runnertest.TypeSucceed}].Name())
}
