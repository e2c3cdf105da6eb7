package workflow_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// remoteOnlySpecs are the specs of an instance that runs the remote task
// type and declares no workflow.
const remoteOnlySpecs = `
kind: TaskType
name: remote
handler: {builtin: remote}
outputs: {type: object, properties: {from: {type: string}}}
`

// otherWorkflowSpecs are those of an instance that runs it and declares
// another workflow than the run's.
const otherWorkflowSpecs = remoteOnlySpecs + `---
kind: Workflow
name: other
steps:
  only: {task_type: remote}
`

// TestStepFinishedByAnotherInstance: two engines on one database. The
// workflow's engine starts a run of relay (first: a remote task, then
// second: echo, which sees first's outputs), while it does not run; the
// other engine, whose specs declare the remote task type but not relay
// (none at all, or another workflow), runs first's task. The run neither
// fails nor stays stuck: once the workflow's engine runs, it advances the
// run from the step the other engine finished, and second sees that
// engine's outputs. The workflow's engine ran before (its statement of the
// workflows it declares holds), so the other engine's leader does not take
// relay for a workflow no instance declares (TestUndeclaredWorkflow...).
func TestStepFinishedByAnotherInstance(t *testing.T) {
	t.Parallel()
	for name, specs := range map[string]string{"no workflows": remoteOnlySpecs, "another workflow": otherWorkflowSpecs} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, nil, false)
			run := b.start(t, "relay", `{}`)
			require.NoError(t, b.st.DeclareWorkflows(ctx, b.e.Owner(), "wf", b.e.Workflows().Names(), time.Hour, nil))

			runEngine(t, otherEngine(t, b, specs))

			first := b.onlyTask(t, run.ID)
			require.Eventually(t, func() bool {
				task, err := b.st.GetTask(ctx, first)
				require.NoError(t, err)
				return task.Status == wftype.StatusCompleted
			}, 90*time.Second, 20*time.Millisecond, "the other engine never ran the first step")
			s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
			require.NoError(t, err)
			require.Equal(t, wftype.RunRunning, s.Run.Status, "an engine that does not know the workflow leaves its run alone: %v", s.Run.Error)

			runEngine(t, b.e)
			s = b.wait(t, run.ID, wftype.RunCompleted)
			require.Equal(t, wftype.StepCompleted, step(t, s, "first").Status)
			require.JSONEq(t, `{"from":"elsewhere"}`, string(step(t, s, "first").Outputs))
			require.JSONEq(t, `{"got":{"from":"elsewhere"}}`, string(step(t, s, "second").Outputs))
		})
	}
}

// otherEngine builds an engine on b's database whose specs are specs (the
// remote task type, no relay workflow) and whose remote handler answers
// {"from":"elsewhere"}; each of adjust may change its configuration first.
func otherEngine(t *testing.T, b *bundle, specs string, adjust ...func(*engine.Config)) *engine.Engine {
	t.Helper()
	set, err := spec.Compile([]spec.Source{{Name: "remote.yaml", Data: []byte(specs)}}, spec.Options{Builtins: []string{"remote"}})
	require.NoError(t, err)
	reg := builtin.NewRegistry()
	require.NoError(t, reg.Register("remote", func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
		return json.RawMessage(`{"from":"elsewhere"}`), nil
	}))
	cfg := engine.Config{
		Name: "wf-other-" + uuid.NewString()[:8], Pool: b.pool, Specs: set, Registry: reg,
		PollInterval: 100 * time.Millisecond, Slots: 5,
		NoEventConsumer: true, // its spec set is not the fleet's: it must not settle the others' events
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	for _, a := range adjust {
		a(&cfg)
	}
	other, err := engine.New(cfg)
	require.NoError(t, err)
	return other
}

// TestFanOutFinishedByTwoInstances: the 20 items of a for_each step run on
// two engines at once, the workflow's (which advances the run as it ends
// its items) and another whose specs declare another workflow (which
// records its items' ends for the first one's step pass). Every item is
// counted once: the fan-in step is created once, and sees 20 outputs.
func TestFanOutFinishedByTwoInstances(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil, true)
	runEngine(t, otherEngine(t, b, otherWorkflowSpecs))
	run := b.start(t, "relay_many", `{}`)
	s := b.wait(t, run.ID, wftype.RunCompleted)
	require.JSONEq(t, `{"got":{"n":20}}`, string(step(t, s, "join").Outputs))
	items := b.itemTasks(t, run.ID, "each")
	require.Len(t, items, 20, "one task per item")
	for _, it := range items {
		require.Equal(t, wftype.StatusCompleted, it.status)
	}
	require.Len(t, b.itemTasks(t, run.ID, "join"), 1, "the fan-in step is created once")
	var elsewhere, left int
	require.NoError(t, b.pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE outputs->>'from' = 'elsewhere') FROM tasks.tasks
WHERE workflow_run_id = $1 AND workflow_step = 'each'`, run.ID).Scan(&elsewhere))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM tasks.workflow_step_ends`).Scan(&left))
	require.Zero(t, left, "every recorded end was applied")
	t.Logf("%d of 20 items ran on the other engine", elsewhere)
}
