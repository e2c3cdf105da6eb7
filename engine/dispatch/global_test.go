package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/signalbus"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// TestGlobalLimitAcrossInstances: six instances, each with its own pool and
// plenty of slots, share a backlog of a task type capped at three ACTIVE
// tasks across all instances. Every instance is woken at once, again and
// again (as followers' poll timers do), so that their claims coincide; no
// more than three tasks ever run at once, and every task completes.
func TestGlobalLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	const (
		instances = 6
		limit     = 3
		tasks     = 150
	)
	url := dbtest.NewDatabase(t)
	// round is closed, and replaced, after each round of wake-ups.
	var roundMu sync.Mutex
	round := make(chan struct{})
	var cur, peak atomic.Int32
	r := funcRunner{types: map[string]bool{"capped": true}, fn: func(context.Context, *wftype.Task) (json.RawMessage, error) {
		n := cur.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		// The task's work lasts until every instance has been woken again,
		// so that their claims overlap it.
		roundMu.Lock()
		next := round
		roundMu.Unlock()
		<-next
		cur.Add(-1)
		return nil, nil
	}}
	buses := make([]*signalbus.Bus, instances)
	for i := range instances {
		inst := &bundle{ctx: context.Background(), store: store.New(dbtest.PoolFor(t, url)), bus: signalbus.New()}
		buses[i] = inst.bus
		d := inst.dispatcher(t, fmt.Sprintf("w%d", i), r, func(c *dispatch.Config) {
			c.Rules[runners.Pair{Mode: wftype.ModeAsync, TaskType: "capped"}] = execution.Rule{Global: limit}
		})
		stop := runFor(d)
		defer stop()
	}

	b := &bundle{ctx: context.Background(), store: store.New(dbtest.PoolFor(t, url)), bus: signalbus.New()}
	enqueue(t, b, "capped", tasks, 0)
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				for _, bus := range buses {
					bus.Publish(signalbus.TaskQueued, "capped")
				}
				roundMu.Lock()
				close(round)
				round = make(chan struct{})
				roundMu.Unlock()
			}
		}
	}()
	require.Eventually(t, func() bool { return countStatus(t, b, wftype.StatusCompleted) == tasks }, 60*time.Second, 10*time.Millisecond)
	require.LessOrEqual(t, peak.Load(), int32(limit), "tasks of a globally capped type ran at once")
	t.Logf("peak: %d of %d", peak.Load(), limit)
}
