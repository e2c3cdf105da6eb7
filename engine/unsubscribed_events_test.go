package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// unsubscribedSpecs: no Subscription at all; a task type that fails (once,
// then dead-letters, or permanently when asked) and a one-step workflow.
const unsubscribedSpecs = `kind: TaskType
name: boom
description: Fails.
handler: {builtin: fail}
max_retries: 0
---
kind: TaskType
name: quiet
description: Succeeds.
handler: {builtin: noop}
---
kind: Workflow
name: one
steps:
  only: {task_type: quiet}
`

// TestEventsWithoutSubscriptionsDoNotPileUp: on a deployment with no
// Subscription spec, wf still writes its own events (task.failed,
// task.dead_lettered, workflow.completed). The engine consumes them anyway:
// one nobody wants is held back once, until it is events.unmatched_grace
// old (an instance deployed with a new Subscription may want it), and
// deleted then; an old one at once. So none stays due, and retention can
// then drop an old month's events partition (it keeps a partition while it
// holds a PENDING event).
func TestEventsWithoutSubscriptionsDoNotPileUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	set, err := spec.Compile([]spec.Source{{Name: "unsubscribed.yaml", Data: []byte(unsubscribedSpecs)}}, spec.Options{Builtins: builtin.Names()})
	require.NoError(t, err)
	require.Empty(t, set.Subscriptions())

	// An event left PENDING in a month long past (written before this
	// instance ran, or by one that did not consume).
	old := clock.Now().UTC().AddDate(0, -4, 0)
	oldPart := "tasks.events_p" + old.Format("2006_01")
	_, err = st.EnsurePartitions(ctx, old, 1)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
INSERT INTO tasks.events (event_id, created_at, event_type, scope, schema_name, status)
VALUES (tasks.uuid_v7($1), $1, 'thing.happened', 'PLATFORM', 'system', 'PENDING')`, old)
	require.NoError(t, err)

	e, err := engine.New(engine.Config{
		Name: "unsubscribed", Pool: pool, Specs: set, PollInterval: 100 * time.Millisecond, Logger: warnLogger(),
	})
	require.NoError(t, err)
	inproc.Go(t, e.Run)

	cl := e.Client()
	for _, in := range []string{`{"permanent": true}`, `{}`} {
		_, err := cl.Enqueue(ctx, clientRequest("boom", in))
		require.NoError(t, err)
	}
	run, err := e.Workflows().Start(ctx, st, workflow.StartRequest{Workflow: "one"})
	require.NoError(t, err)

	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, q, args...).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM tasks.tasks WHERE task_type = 'boom' AND status IN ('FAILED', 'DEAD_LETTER')`) == 2 &&
			count(`SELECT count(*) FROM tasks.workflow_runs WHERE run_id = $1 AND status = $2`, run.ID, wftype.RunCompleted) == 1
	}, 60*time.Second, 20*time.Millisecond, "the tasks and the run did not end")
	// Every event written (the old one, task.failed, task.dead_lettered,
	// workflow.completed) is settled: the old one deleted, the others held
	// back until they are the grace old, none due or PROCESSING.
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM tasks.events
WHERE status = 'PROCESSING' OR (status = 'PENDING' AND run_after <> created_at + $1::interval)`,
			events.DefaultUnmatchedGrace) == 0
	}, 60*time.Second, 20*time.Millisecond, "events left unconsumed")
	require.Equal(t, 3, count(`SELECT count(*) FROM tasks.events`), "the old event was not deleted, or the others were")

	// Retention (the leader's, or this run) drops the old month's events
	// partition, which the PENDING event used to keep. The leader's first
	// maintenance may run at the same time and drop it first: this run
	// then finds it gone, which is no error.
	sup, err := maintenance.New(maintenance.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	res, runErr := sup.RunOnce(ctx, clock.Now())
	require.NoError(t, runErr)
	parts, err := st.ListPartitions(ctx, "tasks.events")
	require.NoError(t, err)
	for _, p := range parts {
		require.NotEqual(t, oldPart, p.Table, "retention kept the old month's events partition: %+v (%v)", res, runErr)
	}
}

// clientRequest is an enqueue of a task of type tt with inputs.
func clientRequest(tt, inputs string) client.Request {
	return client.Request{TaskType: tt, Inputs: json.RawMessage(inputs)}
}
