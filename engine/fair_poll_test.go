package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// heldRunner runs tasks of type "fair": it reports each start's tenant on
// started, and holds tenant ta's runs until release lets one end.
type heldRunner struct {
	started chan string
	release chan struct{}
}

func (r heldRunner) Name() string  { return "held" }
func (r heldRunner) Priority() int { return 100 }
func (r heldRunner) CanHandle(m wftype.ExecutionMode, tt string) bool {
	return m == wftype.ModeAsync && tt == "fair"
}
func (r heldRunner) Run(ctx context.Context, tk *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	r.started <- tk.SchemaName
	if tk.SchemaName == "ta" {
		select {
		case <-r.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, nil
}

// TestFairTurnOnAFollowerAtItsPoll: a follower hears no task-queued
// notifications; it learns of due work by its probe once a poll interval,
// which sends a signal that names no tenant. Under tenant ta's flood, the
// follower's dispatcher claims without fairness once a fair claim found ta
// alone (engine/dispatch/census.go); tenant tb's task, queued then, is
// news it does not hear. Its next poll's signal makes the next claim fair:
// tb's task starts before ta's backlog drains. The clock moves by poll
// intervals only, far less than the census's own bound (censusAge, the
// default poll interval, not this test's): without the poll's signal,
// every claim would take ta's tasks until none were left.
func TestFairTurnOnAFollowerAtItsPoll(t *testing.T) {
	t.Parallel()
	const slots, flood = 4, 1000
	const poll = 100 * time.Millisecond
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	ctx := context.Background()
	fake := clock.NewFake(clock.Now().UTC().Add(time.Hour)) // tasks queued now are due, however slow the machine
	for _, tn := range []string{"ta", "tb"} {
		_, err := st.CreateCatalog(ctx, store.NewCatalog{ID: tn, SchemaName: tn})
		require.NoError(t, err)
	}
	enqueue := func(tenant string, n int) {
		batch := make([]store.NewTask, n)
		for i := range batch {
			batch[i] = store.NewTask{SchemaName: tenant, Scope: wftype.ScopeCatalog, ExecutionMode: wftype.ModeAsync,
				TaskType: "fair", Inputs: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		}
		_, err := st.InsertTasks(ctx, batch)
		require.NoError(t, err)
	}
	withFake := func(c *engine.Config) { c.Clock, c.PollInterval = fake, poll }
	leader, stopLeader := startEngine(t, pool, "leader", anyRunner{[]string{"other"}}, withFake, func(c *engine.Config) {
		c.Pairs = []runners.Pair{{Mode: wftype.ModeAsync, TaskType: "other"}}
	})
	defer stopLeader()
	require.Eventually(t, leader.IsLeader, 20*time.Second, 10*time.Millisecond)
	r := heldRunner{started: make(chan string, flood+10), release: make(chan struct{})}
	_, stopFollower := startEngine(t, pool, "follower", r, withFake, func(c *engine.Config) {
		c.Pairs = []runners.Pair{{Mode: wftype.ModeAsync, TaskType: "fair"}}
		c.Slots, c.ClaimAhead = slots, -1
	})
	defer stopFollower()
	defer close(r.release) // before the stops: ta's runs end

	next := func() string {
		t.Helper()
		select {
		case tn := <-r.started:
			return tn
		case <-time.After(60 * time.Second):
			t.Fatal("no run started within a minute")
			return ""
		}
	}
	// expectTa releases n of ta's runs, one at a time, and requires each
	// freed slot to go to ta.
	expectTa := func(n int, why string) {
		t.Helper()
		for range n {
			r.release <- struct{}{}
			require.Equal(t, "ta", next(), why)
		}
	}

	enqueue("ta", flood)
	fake.Advance(poll) // the follower's probe finds ta's tasks: a fair claim finds ta alone
	for range slots {
		require.Equal(t, "ta", next())
	}
	expectTa(slots, "ta alone")
	enqueue("tb", 1) // the follower does not hear of it

	fake.Advance(poll) // its next poll
	taStarted := 2 * slots
	for {
		r.release <- struct{}{}
		if next() == "tb" {
			break
		}
		taStarted++
		require.Less(t, taStarted, flood-slots, "tb's task waited for ta's whole backlog")
	}
}
