package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	wfevents "github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/maintenance/scheduler"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// triggerSpecs add to childSpecs a subscription and a schedule that start
// runs of child.
const triggerSpecs = childSpecs + `---
kind: Subscription
name: start-child
event_type: child.requested
workflow: child
inputs: {n: event.payload.n}
payload: {type: object, required: [n], properties: {n: {type: integer}}}
---
kind: Schedule
name: child-every-minute
cron: "* * * * *"
workflow: child
inputs: {n: 7}
`

// countRuns counts the runs of child with a trigger of kind.
func (b *bundle) countRuns(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// TestSubscriptionStartsOneRunPerEvent: three consumers (three instances)
// drain 30 events of a subscription that starts a workflow: one run per
// event, each recording its event and starting its first step, in the
// event's tenant. Then eight transactions race to start the run of one
// start key: one starts it, the others find it.
func TestSubscriptionStartsOneRunPerEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSpecs(t, triggerSpecs, false)
	set := compileSpecs(t, triggerSpecs)
	ids := map[string]bool{}
	for i := range 30 {
		res, err := b.e.Emitter().Emit(ctx, wfevents.Event{Type: "child.requested", Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))})
		require.NoError(t, err)
		ids[res.Event.ID.String()] = true
	}
	var wg sync.WaitGroup
	started := make([]int, 3)
	for c := range 3 {
		cons, err := wfevents.NewConsumer(wfevents.ConsumerConfig{
			Store: b.st, Client: b.e.Client(), Specs: set, Runs: b.e.Workflows(), Owner: fmt.Sprintf("consumer-%d", c),
			BatchSize: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := cons.RunOnce(ctx)
				if err != nil {
					t.Errorf("consumer %d: %v", c, err)
					return
				}
				started[c] += res.Runs
				if res.Claimed == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 30, started[0]+started[1]+started[2], "runs started by the consumers: %v", started)
	require.Equal(t, 30, b.countRuns(t, `SELECT count(*) FROM tasks.workflow_runs WHERE started_by->>'kind' = 'event'`))
	require.Equal(t, 30, b.countRuns(t, `SELECT count(DISTINCT started_by->>'event_id') FROM tasks.workflow_runs`))
	runs, err := b.st.ListWorkflowRuns(ctx, store.WorkflowRunFilter{Workflow: "child", Limit: 100})
	require.NoError(t, err)
	require.Len(t, runs, 30)
	for _, r := range runs {
		require.NotNil(t, r.StartedBy)
		require.Equal(t, wftype.TriggerEvent, r.StartedBy.Kind)
		require.Equal(t, "start-child", r.StartedBy.Subscription)
		require.True(t, ids[r.StartedBy.EventID], "run %s names event %s, which was not emitted", r.ID, r.StartedBy.EventID)
		require.Equal(t, "system", r.SchemaName)
		s, err := b.e.Workflows().Get(ctx, b.st, r.ID)
		require.NoError(t, err)
		require.Equal(t, wftype.StepRunning, step(t, s, "work").Status, "its first step started with it")
		v := b.e.Workflows().View(s, "/x")
		require.Equal(t, r.StartedBy.EventID, v.StartedBy.EventID)
	}
	require.Equal(t, 0, b.countRuns(t, `SELECT count(*) FROM tasks.events WHERE event_type = 'child.requested'`), "every event consumed")

	// Eight transactions start the run of one key at once.
	var mu sync.Mutex
	n := 0
	var race sync.WaitGroup
	gate := make(chan struct{})
	for range 8 {
		race.Add(1)
		go func() {
			defer race.Done()
			<-gate
			err := b.st.InTx(ctx, func(tx *store.Store) error {
				ok, err := b.e.Workflows().StartTriggered(ctx, tx, "child", "system", json.RawMessage(`{"n": 1}`),
					wftype.RunTrigger{Kind: wftype.TriggerEvent, Subscription: "start-child", EventID: "race"}, "evt:race:start-child")
				if ok {
					mu.Lock()
					n++
					mu.Unlock()
				}
				return err
			})
			if err != nil {
				t.Errorf("racing start: %v", err)
			}
		}()
	}
	close(gate)
	race.Wait()
	require.Equal(t, 1, n, "one of the racing transactions starts the run")
	require.Equal(t, 1, b.countRuns(t, `SELECT count(*) FROM tasks.workflow_runs WHERE start_key = 'evt:race:start-child'`))
}

// TestScheduleStartsOneRunPerTick: two instances that both believe they
// lead run a scheduling pass at each of five ticks, concurrently: five
// runs, each recording its schedule and tick.
func TestScheduleStartsOneRunPerTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSpecs(t, triggerSpecs, false)
	set := compileSpecs(t, triggerSpecs)
	t0 := clock.Now().UTC().Truncate(time.Hour).Add(time.Minute)
	fake := clock.NewFake(t0)
	leaders := make([]*scheduler.Scheduler, 2)
	for i := range leaders {
		s, err := scheduler.New(scheduler.Config{
			Store: b.st, Client: b.e.Client(), Runs: b.e.Workflows(), Schedules: set.Schedules(), Clock: fake,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		require.NoError(t, err)
		_, err = s.Resume(ctx, t0)
		require.NoError(t, err)
		leaders[i] = s
	}
	fired := 0
	for i := 1; i <= 5; i++ {
		now := t0.Add(time.Duration(i)*time.Minute + 3*time.Second)
		fake.Set(now)
		var wg sync.WaitGroup
		results := make([]scheduler.Result, 2)
		for j, s := range leaders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.RunAt(ctx, now)
				if err != nil {
					t.Errorf("leader %d: %v", j, err)
				}
				results[j] = r
			}()
		}
		wg.Wait()
		require.Equal(t, 1, results[0].Fired+results[1].Fired, "tick %d: %+v", i, results)
		fired += results[0].Fired + results[1].Fired
	}
	require.Equal(t, 5, fired)
	require.Equal(t, 5, b.countRuns(t, `SELECT count(*) FROM tasks.workflow_runs WHERE started_by->>'kind' = 'schedule'`))
	require.Equal(t, 5, b.countRuns(t, `SELECT count(DISTINCT started_by->>'tick') FROM tasks.workflow_runs`))
	runs, err := b.st.ListWorkflowRuns(ctx, store.WorkflowRunFilter{Workflow: "child", Limit: 100})
	require.NoError(t, err)
	for _, r := range runs {
		require.Equal(t, "child-every-minute", r.StartedBy.Schedule)
		require.NotNil(t, r.StartedBy.Tick)
		require.JSONEq(t, `{"n": 7}`, string(r.Inputs))
	}
}
