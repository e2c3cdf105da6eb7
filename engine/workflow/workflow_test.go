package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// pipelineSpecs: list makes n file names; convert runs once per file (two
// at a time); index runs unless skip_index; tiles waits for both (and so
// skips when index is skipped); notify runs whatever tiles did.
const pipelineSpecs = `
kind: TaskType
name: list
handler: {builtin: list}
inputs: {type: object, properties: {n: {type: integer}}}
outputs:
  type: object
  properties:
    files: {type: array, items: {type: string}}
    count: {type: integer}
---
kind: TaskType
name: echo
handler: {builtin: echo}
max_retries: 0
outputs: {type: object, properties: {got: {type: object}}}
---
kind: TaskType
name: block
handler: {builtin: block}
---
kind: Workflow
name: pipeline
inputs:
  type: object
  required: [n]
  properties:
    n: {type: integer}
    skip_index: {type: boolean}
    fail: {type: boolean}
steps:
  list: {task_type: list, inputs: {n: inputs.n}}
  convert:
    task_type: echo
    depends_on: [list]
    for_each: steps.list.outputs.files
    concurrency: 2
    inputs: {file: item, i: item_index, fail: 'inputs.fail ?? false'}
  index:
    task_type: echo
    depends_on: [list]
    when: '!(inputs.skip_index ?? false)'
    max_retries: 7
    priority: 9
    inputs: {count: steps.list.outputs.count}
  tiles:
    task_type: echo
    depends_on: [convert, index]
    inputs: {files: 'map(steps.convert.outputs, .got.file)'}
  notify:
    task_type: echo
    depends_on: [tiles]
    on_upstream_skipped: run
    inputs: {tiles: steps.tiles.status}
---
kind: TaskType
name: nothing
handler: {builtin: nothing}
---
kind: Workflow
name: chain10
steps:
  s0: {task_type: nothing}
  s1: {task_type: nothing, depends_on: [s0]}
  s2: {task_type: nothing, depends_on: [s1]}
  s3: {task_type: nothing, depends_on: [s2]}
  s4: {task_type: nothing, depends_on: [s3]}
  s5: {task_type: nothing, depends_on: [s4]}
  s6: {task_type: nothing, depends_on: [s5]}
  s7: {task_type: nothing, depends_on: [s6]}
  s8: {task_type: nothing, depends_on: [s7]}
  s9: {task_type: nothing, depends_on: [s8]}
---
kind: Workflow
name: fan1000
inputs: {type: object, properties: {n: {type: integer}}}
steps:
  each: {task_type: nothing, for_each: 'map(1..inputs.n, #)', concurrency: 1000}
  join: {task_type: nothing, depends_on: [each]}
---
kind: TaskType
name: leak
handler: {builtin: leak}
max_retries: 0
---
kind: Workflow
name: leaky
inputs: {type: object, properties: {url: {type: string}}}
steps:
  fetch: {task_type: echo, inputs: {url: inputs.url}}
  get: {task_type: leak, depends_on: [fetch], inputs: {url: steps.fetch.outputs.got.url}}
---
kind: Workflow
name: leaky_expr
inputs: {type: object, properties: {url: {type: string}}}
steps:
  parse: {task_type: echo, inputs: {n: 'int(inputs.url)'}}
---
kind: Workflow
name: stuck
timeout: 1h
steps:
  wait: {task_type: block}
  after: {task_type: echo, depends_on: [wait]}
---
kind: TaskType
name: keyed
handler: {builtin: nothing}
dedup_key: 'inputs.k'
inputs: {type: object, properties: {k: {type: string}}}
---
kind: Workflow
name: longkey
inputs: {type: object, properties: {k: {type: string}}}
steps:
  first: {task_type: nothing}
  second: {task_type: keyed, depends_on: [first], inputs: {k: inputs.k}}
---
kind: Workflow
name: longkeyfirst
inputs: {type: object, properties: {k: {type: string}}}
steps:
  first: {task_type: keyed, inputs: {k: inputs.k}}
---
kind: TaskType
name: gate
handler: {builtin: gate}
max_retries: 0
---
kind: Workflow
name: fan50
steps:
  each: {task_type: gate, for_each: 'map(1..50, # - 1)', concurrency: 2, inputs: {i: item_index}}
  side: {task_type: gate, inputs: {i: '100'}}
  after: {task_type: echo, depends_on: [each, side]}
---
kind: TaskType
name: remote
handler: {builtin: remote}
outputs: {type: object, properties: {from: {type: string}}}
---
kind: Workflow
name: relay
steps:
  first: {task_type: remote}
  second: {task_type: echo, depends_on: [first], inputs: {from: steps.first.outputs.from}}
---
kind: Workflow
name: relay_many
steps:
  each: {task_type: remote, for_each: 'map(1..20, #)', concurrency: 20, inputs: {i: item_index}}
  join: {task_type: echo, depends_on: [each], inputs: {n: 'len(steps.each.outputs)'}}
---
kind: Workflow
name: gather
timeout: 720h
steps:
  each: {task_type: remote, for_each: '[10, 11, 12]', concurrency: 3, inputs: {i: item_index}}
  join: {task_type: echo, depends_on: [each], inputs: {outs: steps.each.outputs}}
---
kind: Workflow
name: pair
steps:
  a: {task_type: echo}
  b: {task_type: nothing, max_retries: 3}
`

// testBuiltins are the builtin handlers the test specs name.
var testBuiltins = []string{"list", "echo", "block", "nothing", "leak", "gate", "remote"}

// handlers are the test's builtin handlers and what they saw.
type handlers struct {
	running, maxItems atomic.Int32 // convert items running at once, and the most seen
	failing           atomic.Bool  // echo fails items whose inputs say fail
	blocked           chan struct{}
	gates             gates
}

// gates holds each item of a gate step until the test releases it.
type gates struct {
	mu      sync.Mutex
	ch      map[int]chan bool // true: the item fails for good
	started chan int          // the items that started, in order
}

// of is item i's gate.
func (g *gates) of(i int) chan bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = map[int]chan bool{}
	}
	if g.ch[i] == nil {
		g.ch[i] = make(chan bool, 1)
	}
	return g.ch[i]
}

// open lets every item, waiting or to come, complete at once.
func (g *gates) open() {
	for i := range 101 {
		close(g.of(i))
	}
}

func (h *handlers) registry() *builtin.Registry {
	reg := builtin.NewRegistry()
	_ = reg.Register("list", func(_ context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		var in struct{ N int }
		if err := json.Unmarshal(task.Inputs, &in); err != nil {
			return nil, err
		}
		files := make([]string, in.N)
		for i := range files {
			files[i] = fmt.Sprintf("f%d", i)
		}
		return json.Marshal(map[string]any{"files": files, "count": in.N})
	})
	_ = reg.Register("echo", func(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		var in map[string]any
		if err := json.Unmarshal(task.Inputs, &in); err != nil {
			return nil, err
		}
		if _, item := in["file"]; item {
			n := h.running.Add(1)
			defer h.running.Add(-1)
			for {
				m := h.maxItems.Load()
				if n <= m || h.maxItems.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond) // work, so that items overlap
			if in["fail"] == true && h.failing.Load() {
				return nil, wftype.Permanent(errors.New("bad file"))
			}
		}
		return json.Marshal(map[string]any{"got": in})
	})
	_ = reg.Register("leak", func(_ context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		var in struct{ URL string }
		_ = json.Unmarshal(task.Inputs, &in)
		return nil, wftype.Permanent(fmt.Errorf("error fetching %s: 403 Forbidden", in.URL))
	})
	_ = reg.Register("remote", func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
		return json.RawMessage(`{"from":"the workflow's instance"}`), nil
	})
	_ = reg.Register("nothing", func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
		return nil, nil
	})
	_ = reg.Register("gate", func(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		var in struct{ I int }
		if err := json.Unmarshal(task.Inputs, &in); err != nil {
			return nil, err
		}
		h.gates.started <- in.I
		select {
		case fail := <-h.gates.of(in.I):
			if fail {
				return nil, wftype.Permanent(fmt.Errorf("item %d is bad", in.I))
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.Marshal(map[string]any{"i": in.I})
	})
	_ = reg.Register("block", func(ctx context.Context, _ *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
		select {
		case h.blocked <- struct{}{}:
		case <-ctx.Done():
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return reg
}

// bundle is one test's database, engine and handlers.
type bundle struct {
	pool *pgxpool.Pool
	e    *engine.Engine
	st   *store.Store
	h    *handlers
}

// setup builds an engine over the test specs; run starts it.
func setup(t testing.TB, clk clock.Clock, run bool) *bundle {
	t.Helper()
	pool := dbtest.NewPool(t)
	set, err := spec.Compile([]spec.Source{{Name: "workflows.yaml", Data: []byte(pipelineSpecs)}},
		spec.Options{Builtins: testBuiltins})
	require.NoError(t, err)
	h := &handlers{blocked: make(chan struct{}, 10), gates: gates{started: make(chan int, 200)}}
	e, err := engine.New(engine.Config{
		Name: "wf-" + uuid.NewString()[:8], Pool: pool, Specs: set, Registry: h.registry(), Clock: clk,
		PollInterval: 100 * time.Millisecond, Slots: 20,
		NoEventConsumer: true, // the tests read the workflow.* events in the outbox
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	if run {
		runEngine(t, e)
	}
	return &bundle{pool: pool, e: e, st: e.Store(), h: h}
}

// runEngine runs e until the test ends.
func runEngine(t testing.TB, e *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// start starts a run of the workflow called name with inputs.
func (b *bundle) start(t testing.TB, name, inputs string) wftype.WorkflowRun {
	t.Helper()
	run, err := b.e.Workflows().Start(context.Background(), b.st, workflow.StartRequest{Workflow: name, Inputs: json.RawMessage(inputs)})
	require.NoError(t, err)
	return run
}

// wait waits until the run reaches status.
func (b *bundle) wait(t testing.TB, id uuid.UUID, status wftype.RunStatus) workflow.Status {
	t.Helper()
	var s workflow.Status
	require.Eventually(t, func() bool {
		var err error
		s, err = b.e.Workflows().Get(context.Background(), b.st, id)
		require.NoError(t, err)
		return s.Run.Status == status
	}, 90*time.Second, 20*time.Millisecond, "run %s never became %s", id, status)
	return s
}

// waitBlocked waits until a block step's task runs.
func (b *bundle) waitBlocked(t testing.TB) {
	t.Helper()
	select {
	case <-b.h.blocked:
	case <-time.After(90 * time.Second):
		t.Fatal("the blocking step never started")
	}
}

// retryOnceEnded retries a run as soon as every task of its last attempt
// ended (a retry before is a conflict).
func (b *bundle) retryOnceEnded(t testing.TB, id uuid.UUID) wftype.WorkflowRun {
	t.Helper()
	var retried wftype.WorkflowRun
	require.Eventually(t, func() bool {
		var err error
		retried, err = b.e.Workflows().Retry(context.Background(), b.st, id)
		if errors.Is(err, wftype.ErrConflict) {
			return false
		}
		require.NoError(t, err)
		return true
	}, 2*time.Minute, 20*time.Millisecond)
	return retried
}

// onlyTask is the id of a run's one task.
func (b *bundle) onlyTask(t testing.TB, run uuid.UUID) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT task_id FROM tasks.tasks WHERE workflow_run_id = $1`, run).Scan(&id))
	return id
}

// step returns a step of a status by name.
func step(t *testing.T, s workflow.Status, name string) wftype.WorkflowStep {
	t.Helper()
	for _, st := range s.Steps {
		if st.Step == name {
			return st
		}
	}
	t.Fatalf("no step %s", name)
	return wftype.WorkflowStep{}
}

// events counts the events of a type about a run.
func events(t *testing.T, pool *pgxpool.Pool, typ string, run uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM tasks.events WHERE event_type = $1 AND payload->>'run_id' = $2`, typ, run.String()).Scan(&n))
	return n
}

// TestRunPassesOutputsFansOutAndIn: a run goes through every step; each
// step's task sees its upstream steps' outputs; the for_each step runs one
// task per item, never more than its concurrency at once, and the fan-in
// step sees every item's outputs in order; per-step overrides reach the
// task rows; workflow.completed is emitted once.
func TestRunPassesOutputsFansOutAndIn(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	run := b.start(t, "pipeline", `{"n": 7}`)
	require.Equal(t, wftype.RunRunning, run.Status)
	s := b.wait(t, run.ID, wftype.RunCompleted)

	for _, name := range []string{"list", "convert", "index", "tiles", "notify"} {
		require.Equal(t, wftype.StepCompleted, step(t, s, name).Status, name)
	}
	convert := step(t, s, "convert")
	require.Equal(t, 7, *convert.Items)
	require.Equal(t, 7, convert.Started)
	require.Equal(t, 7, convert.Done)
	var tiles struct{ Got struct{ Files []string } }
	require.NoError(t, json.Unmarshal(step(t, s, "tiles").Outputs, &tiles))
	require.Equal(t, []string{"f0", "f1", "f2", "f3", "f4", "f5", "f6"}, tiles.Got.Files)
	require.LessOrEqual(t, b.h.maxItems.Load(), int32(2), "more convert items ran at once than its concurrency")
	require.Len(t, s.Tasks, 1+7+1+1+1)

	var retries, prio int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT max_retries, priority FROM tasks.tasks WHERE workflow_run_id = $1 AND workflow_step = 'index'`, run.ID).Scan(&retries, &prio))
	require.Equal(t, 7, retries)
	require.Equal(t, 9, prio)
	require.Equal(t, 1, events(t, b.pool, workflow.EventCompleted, run.ID))
}

// TestSkipPropagates: a step skipped by its when skips the step that waits
// for it (the default), and the step declared on_upstream_skipped: run runs
// and sees the skip.
func TestSkipPropagates(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	run := b.start(t, "pipeline", `{"n": 2, "skip_index": true}`)
	s := b.wait(t, run.ID, wftype.RunCompleted)
	require.Equal(t, wftype.StepSkipped, step(t, s, "index").Status)
	require.Equal(t, wftype.StepSkipped, step(t, s, "tiles").Status)
	notify := step(t, s, "notify")
	require.Equal(t, wftype.StepCompleted, notify.Status)
	require.JSONEq(t, `{"got": {"tiles": "SKIPPED"}}`, string(notify.Outputs))
	require.Len(t, s.Tasks, 1+2+1, "list, two items, notify")
}

// TestFailedRunRetriesFromTheFailedStep: an item fails, so its step and the
// run fail (workflow.failed); retried, the run creates only the failed
// step's tasks again (list keeps its one task and its outputs) and
// completes.
func TestFailedRunRetriesFromTheFailedStep(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	b.h.failing.Store(true)
	run := b.start(t, "pipeline", `{"n": 3, "fail": true}`)
	s := b.wait(t, run.ID, wftype.RunFailed)
	require.Equal(t, wftype.StepFailed, step(t, s, "convert").Status)
	require.Contains(t, *s.Run.Error, "step convert failed")
	require.Contains(t, *s.Run.Error, "bad file")
	require.Equal(t, 1, events(t, b.pool, workflow.EventFailed, run.ID))
	listBefore := step(t, s, "list")

	// Retrying a run that is not FAILED or CANCELLED is refused.
	_, err := b.e.Workflows().Retry(context.Background(), b.st, uuid.Must(uuid.NewV7()))
	require.ErrorIs(t, err, wftype.ErrNotFound)

	// The failed step's other items may still be running (the run failed
	// with the first): the retry is refused until they end.
	b.h.failing.Store(false)
	retried := b.retryOnceEnded(t, run.ID)
	require.Equal(t, wftype.RunRunning, retried.Status)
	require.Equal(t, 2, retried.Attempt)
	_, err = b.e.Workflows().Retry(context.Background(), b.st, run.ID)
	require.ErrorIs(t, err, wftype.ErrConflict)

	s = b.wait(t, run.ID, wftype.RunCompleted)
	require.Equal(t, listBefore.Outputs, step(t, s, "list").Outputs)
	perStep := map[string]int{}
	for _, task := range s.Tasks {
		perStep[task.Step]++
	}
	require.Equal(t, 1, perStep["list"], "the completed step ran once")
	require.GreaterOrEqual(t, perStep["convert"], 3+1, "every item again, besides the first attempt's")
	require.Equal(t, 1, events(t, b.pool, workflow.EventCompleted, run.ID))
}

// TestCancelStopsRunningAndPendingSteps: cancelling a run stops its running
// step's task, leaves no step to be created and emits workflow.cancelled;
// cancelling it again is a conflict.
func TestCancelStopsRunningAndPendingSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	run := b.start(t, "stuck", `{}`)
	b.waitBlocked(t)
	cancelled, err := b.e.Workflows().Cancel(context.Background(), b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunCancelled, cancelled.Status)
	_, err = b.e.Workflows().Cancel(context.Background(), b.st, run.ID)
	require.ErrorIs(t, err, wftype.ErrConflict)

	s, err := b.e.Workflows().Get(context.Background(), b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.StepCancelled, step(t, s, "wait").Status)
	require.Equal(t, wftype.StepCancelled, step(t, s, "after").Status)
	require.Len(t, s.Tasks, 1)
	require.Equal(t, wftype.StatusCancelled, s.Tasks[0].Status)
	require.Equal(t, 1, events(t, b.pool, workflow.EventCancelled, run.ID))
}

// TestTimeoutFailsTheRun: past its workflow's timeout (on the engine's
// clock), Expire fails the run, cancels its steps and their tasks; before
// it, nothing happens.
func TestTimeoutFailsTheRun(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	b := setup(t, clk, false)
	run := b.start(t, "stuck", `{}`)
	require.Equal(t, clk.Now().Add(time.Hour), run.Deadline)

	n, err := b.e.Workflows().Expire(context.Background(), b.st, 10)
	require.NoError(t, err)
	require.Zero(t, n)

	clk.Advance(time.Hour + time.Second)
	n, err = b.e.Workflows().Expire(context.Background(), b.st, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	s, err := b.e.Workflows().Get(context.Background(), b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status)
	require.Contains(t, *s.Run.Error, "timed out")
	require.Equal(t, wftype.StepCancelled, step(t, s, "wait").Status)
	require.Equal(t, wftype.StatusCancelled, s.Tasks[0].Status)
	require.Equal(t, 1, events(t, b.pool, workflow.EventFailed, run.ID))
}

// TestStartRefusesBadRequests: an unknown workflow and inputs that break
// the workflow's schema are refused, and nothing is written.
func TestStartRefusesBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, false)
	_, err := b.e.Workflows().Start(context.Background(), b.st, workflow.StartRequest{Workflow: "nope"})
	require.ErrorIs(t, err, workflow.ErrUnknownWorkflow)
	_, err = b.e.Workflows().Start(context.Background(), b.st, workflow.StartRequest{Workflow: "pipeline", Inputs: json.RawMessage(`{"n": "three"}`)})
	var ie *workflow.InputError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, "/n", ie.Inputs[0].Pointer)
	var runs int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM tasks.workflow_runs`).Scan(&runs))
	require.Zero(t, runs)
}

// TestConcurrentRunsAcrossInstances: four engines share many runs at once;
// every run completes, each step task exists exactly once per (step, item)
// and each fan-in step was created once.
func TestConcurrentRunsAcrossInstances(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	set, err := spec.Compile([]spec.Source{{Name: "workflows.yaml", Data: []byte(pipelineSpecs)}},
		spec.Options{Builtins: testBuiltins})
	require.NoError(t, err)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 3 {
		e, err := engine.New(engine.Config{
			Name: "shared", Owner: fmt.Sprintf("extra-%d", i), Pool: b.pool, Specs: set, Registry: b.h.registry(),
			PollInterval: 100 * time.Millisecond, Slots: 20, NoEventConsumer: true,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		require.NoError(t, err)
		wg.Add(1)
		go func() { defer wg.Done(); _ = e.Run(ctx) }()
	}
	var ids []uuid.UUID
	for range 12 {
		ids = append(ids, b.start(t, "pipeline", `{"n": 9}`).ID)
	}
	for _, id := range ids {
		b.wait(t, id, wftype.RunCompleted)
	}
	var dups int
	require.NoError(t, b.pool.QueryRow(context.Background(), `
SELECT count(*) FROM (
    SELECT workflow_run_id, workflow_step, workflow_item FROM tasks.tasks
    WHERE workflow_run_id IS NOT NULL
    GROUP BY 1, 2, 3 HAVING count(*) > 1) d`).Scan(&dups))
	require.Zero(t, dups, "a step task was created twice")
	var total int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM tasks.tasks WHERE workflow_run_id IS NOT NULL`).Scan(&total))
	require.Equal(t, 12*(1+9+1+1+1), total)
}

// TestRunViewsAndEventsRedactCredentials: a run whose inputs carry a URL
// with a password and a token passes it to its steps (their tasks need
// it), but the run's view (inputs, step outputs, step and run errors,
// tasks' errors), its stored errors and its workflow.failed event show
// neither: for a step whose task failed quoting the URL, and for a step
// whose inputs expression failed quoting it.
func TestRunViewsAndEventsRedactCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, true)
	const url = "https://reader:hunter2@data.example.com/x.gpkg?token=t0ps3cret"
	inputs, err := json.Marshal(map[string]string{"url": url})
	require.NoError(t, err)
	for _, name := range []string{"leaky", "leaky_expr"} {
		run := b.start(t, name, string(inputs))
		s := b.wait(t, run.ID, wftype.RunFailed)
		view, err := json.Marshal(b.e.Workflows().View(s, "/workflows/runs/"+run.ID.String()))
		require.NoError(t, err)
		require.Contains(t, string(view), "REDACTED", name)
		var stored, payload string
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT
			(SELECT coalesce(error, '') FROM tasks.workflow_runs WHERE run_id = $1) ||
			(SELECT coalesce(string_agg(coalesce(error, ''), ' '), '') FROM tasks.workflow_steps WHERE run_id = $1),
			(SELECT payload::text FROM tasks.events WHERE event_type = $2 AND payload->>'run_id' = $1::text)`,
			run.ID, workflow.EventFailed).Scan(&stored, &payload))
		require.Contains(t, payload, "REDACTED", name)
		for _, shown := range []string{string(view), stored, payload} {
			require.NotContains(t, shown, "hunter2", name)
			require.NotContains(t, shown, "t0ps3cret", name)
		}
	}
	// The steps' tasks had the URL as given.
	var got string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT inputs->>'url' FROM tasks.tasks WHERE task_type = 'leak'`).Scan(&got))
	require.Equal(t, url, got)
}
