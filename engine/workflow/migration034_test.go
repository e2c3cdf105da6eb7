package workflow_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	wfevents "github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestMigration034KeepsRunsInFlight: a database at the version before
// migration 034 (*_workflow_waits.sql) holds a run as the code before it
// wrote it (a step RUNNING its task, one
// WAITING for it, one COMPLETED); migrated, the run reads back the
// same (no wait on any step), the wait pass leaves it alone, and it
// advances as before when its task ends, into a step that waits for an
// event, which the outbox trigger the migration adds delivers.
func TestMigration034KeepsRunsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, conn, m, seq := dbtest.MigratedBefore(t, ctx, "_workflow_waits.sql")

	id := uuid.Must(uuid.NewV7())
	_, err := conn.Exec(ctx, `
INSERT INTO tasks.workflow_runs (run_id, workflow, schema_name, status, inputs, created_at, deadline)
VALUES ($1, 'legacy', 'system', 'RUNNING', '{"order_id": "A"}', now(), now() + interval '1 day')`, id)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
INSERT INTO tasks.workflow_steps (run_id, step, status, started, done, outputs, updated_at) VALUES
    ($1, 'first', 'COMPLETED', 1, 1, '{"x": 1}', now()),
    ($1, 'second', 'RUNNING', 1, 0, NULL, now()),
    ($1, 'paid', 'WAITING', 0, 0, NULL, now())`, id)
	require.NoError(t, err)

	require.NoError(t, m.MigrateTo(ctx, seq))

	pool := dbtest.PoolFor(t, url)
	set, err := spec.Compile([]spec.Source{{Name: "legacy.yaml", Data: []byte(`
kind: TaskType
name: nothing
handler: {builtin: nothing}
---
kind: Workflow
name: legacy
inputs: {type: object, properties: {order_id: {type: string}}}
steps:
  first: {task_type: nothing}
  second: {task_type: nothing, depends_on: [first]}
  paid:
    depends_on: [second]
    wait_for_event: {event_type: order.paid, payload: {type: object, properties: {order_id: {type: string}}}, match: 'event.payload.order_id == inputs.order_id'}
`)}}, spec.Options{Builtins: testBuiltins})
	require.NoError(t, err)
	e, err := engine.New(engine.Config{Name: "wf-" + uuid.NewString()[:8], Pool: pool, Specs: set, Registry: (&handlers{}).registry(),
		NoEventConsumer: true, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	wfs, st := e.Workflows(), e.Store()
	s, err := wfs.Get(ctx, st, id)
	require.NoError(t, err)
	require.Len(t, s.Steps, 3)
	for _, step := range s.Steps {
		require.Nil(t, step.WakeAt)
		require.Nil(t, step.WaitEvent)
		require.Nil(t, step.WaitSignal)
		require.Empty(t, workflow.WaitingFor(step))
	}
	require.Equal(t, wftype.StepCompleted, s.Steps[0].Status)
	require.JSONEq(t, `{"x": 1}`, string(s.Steps[0].Outputs))
	res, err := wfs.Wake(ctx, st, 100)
	require.NoError(t, err)
	require.Zero(t, res.Woken)
	require.Nil(t, res.Next)

	// The step's task ends (as the step hook is told), the run goes on to
	// its wait, and an event is delivered to it.
	err = st.InTx(ctx, func(tx *store.Store) error {
		return wfs.Advance(ctx, tx, []store.FinishedStep{{TaskID: uuid.Must(uuid.NewV7()), RunID: id, Step: "second", Item: -1,
			Status: wftype.StatusCompleted, Outputs: json.RawMessage(`{}`)}})
	})
	require.NoError(t, err)
	_, err = e.Emitter().Emit(ctx, wfevents.Event{Type: "order.paid", Payload: json.RawMessage(`{"order_id": "A"}`)})
	require.NoError(t, err)
	res, err = wfs.Wake(ctx, st, 100)
	require.NoError(t, err)
	require.Equal(t, 1, res.Woken)
	s, err = wfs.Get(ctx, st, id)
	require.NoError(t, err)
	require.Equal(t, wftype.RunCompleted, s.Run.Status)
}
