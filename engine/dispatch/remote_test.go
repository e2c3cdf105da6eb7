package dispatch_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// remoteRunner stands for a remote runner (Cloud Run): its worker wrote the
// result elsewhere, so Run reports wftype.ErrFinishedRemotely.
type remoteRunner struct{ funcRunner }

func (remoteRunner) RunsRemotely() bool { return true }

// TestRemoteResultIsNotWritten: for a remote runner the dispatcher builds no
// reporters (an empty local report would replace the worker's), and when
// Run returns ErrFinishedRemotely it writes nothing: here the row is left
// exactly as the "worker" left it (still ACTIVE), where a write would have
// ended it.
func TestRemoteResultIsNotWritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ran := make(chan struct{}, 10)
	remote := remoteRunner{funcRunner{types: map[string]bool{"remote": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		ran <- struct{}{}
		return nil, wftype.ErrFinishedRemotely
	}}}
	local := funcRunner{types: map[string]bool{"local": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		ran <- struct{}{}
		return nil, nil
	}}
	var built atomic.Int32
	pairs := []runners.Pair{{Mode: wftype.ModeAsync, TaskType: "remote"}, {Mode: wftype.ModeAsync, TaskType: "local"}}
	d, err := dispatch.New(dispatch.Config{
		Store: b.store, Owner: "engine-r", Bus: b.bus, Slots: 10,
		Capabilities: runners.BuildCapabilityMap([]runners.Runner{remote, local}, pairs),
		Reporters: func(*wftype.Task) (reporters.Reporter, error) {
			built.Add(1)
			return reporters.Discard{}, nil
		},
	})
	require.NoError(t, err)
	require.True(t, runners.RunsRemotely(remote))

	ids := enqueue(t, b, "remote", 1, 3)
	locals := enqueue(t, b, "local", 1, 3)
	stop := runFor(d)
	<-ran
	<-ran
	require.Eventually(t, func() bool {
		tk, err := b.store.GetTask(b.ctx, locals[0])
		return err == nil && tk.Status == wftype.StatusCompleted
	}, 10*time.Second, 10*time.Millisecond)
	// Run writes every queued result before it returns.
	stop()

	task, err := b.store.GetTask(b.ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, wftype.StatusActive, task.Status, "nothing was written over the worker's state")
	require.Equal(t, "engine-r", *task.OwnerID)
	require.Equal(t, 0, task.RetryCount)
	require.Equal(t, int32(1), built.Load(), "reporters for the local run only")
}
