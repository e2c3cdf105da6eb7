package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// unservedSpecs: "cloudy" names a handler its service's settings are
// missing for; one event starts both a cloudy and a noop task.
const unservedSpecs = `kind: TaskType
name: cloudy
handler: {builtin: cloud_thing}
---
kind: TaskType
name: plain
handler: {builtin: noop}
---
kind: Subscription
name: make-cloudy
event_type: thing.happened
task_type: cloudy
---
kind: Subscription
name: make-plain
event_type: thing.happened
task_type: plain
`

// syncBuffer is a log destination the engine's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUnservedTaskType: a task type whose handler is marked unserved (its
// service is not configured) is listed with the missing setting, logged at
// start, never claimed, and its subscription is inactive: the event that
// would create it creates only the other subscription's task, and no task
// of the unserved type is left looking done or waiting for nobody.
func TestUnservedTaskType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	reg := builtin.NewRegistry()
	const reason = "cloud.project is not set (WF_CLOUD_PROJECT)"
	require.NoError(t, reg.MarkUnserved("cloud_thing", reason))
	set, err := spec.Compile([]spec.Source{{Name: "unserved.yaml", Data: []byte(unservedSpecs)}},
		spec.Options{Builtins: append(builtin.Names(), "cloud_thing")})
	require.NoError(t, err)
	logs := &syncBuffer{}
	e, err := engine.New(engine.Config{
		Name: "unserved", Pool: pool, Specs: set, Registry: reg, PollInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	require.Equal(t, []runnerset.Unserved{{TaskType: "cloudy", Handler: "cloud_thing", Reason: reason}}, e.Unserved())
	inproc.Go(t, e.Run)

	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, q, args...).Scan(&n))
		return n
	}
	_, err = e.Emitter().Emit(ctx, events.Event{Type: "thing.happened", Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	// A cloudy task enqueued by hand (an admin) is kept for an instance
	// that serves it: this one never claims it.
	byHand, err := e.Client().Enqueue(ctx, clientRequest("cloudy", `{}`))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM tasks.tasks WHERE task_type = 'plain' AND status = 'COMPLETED'`) == 1 &&
			count(`SELECT count(*) FROM tasks.events WHERE event_type = 'thing.happened'`) == 0
	}, 60*time.Second, 20*time.Millisecond, "the event was not consumed, or its plain task did not run")
	// The plain task of a later enqueue completes: the dispatcher has
	// claimed since, and left the cloudy one alone.
	later, err := e.Client().Enqueue(ctx, clientRequest("plain", `{}`))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM tasks.tasks WHERE task_id = $1 AND status = 'COMPLETED'`, later.Task.ID) == 1
	}, 60*time.Second, 20*time.Millisecond, "a later task did not run")
	require.Equal(t, 1, count(`SELECT count(*) FROM tasks.tasks WHERE task_type = 'cloudy'`), "the subscription created a cloudy task")
	require.Equal(t, 1, count(`SELECT count(*) FROM tasks.tasks WHERE task_id = $1 AND status = 'PENDING' AND attempts = 0`, byHand.Task.ID))

	require.Contains(t, logs.String(), `msg="task type not served by this instance: its service is not configured" task_type=cloudy reason="`+reason+`"`)
}

// TestUnservedButRunRemotely: a task type whose builtin handler is
// unserved here but which another runner of the engine serves (a remote
// job runner, whose worker may have the settings) is not listed unserved.
func TestUnservedButRunRemotely(t *testing.T) {
	t.Parallel()
	reg := builtin.NewRegistry()
	require.NoError(t, reg.MarkUnserved("cloud_thing", "cloud.project is not set"))
	set, err := spec.Compile([]spec.Source{{Name: "unserved.yaml", Data: []byte(unservedSpecs)}},
		spec.Options{Builtins: append(builtin.Names(), "cloud_thing")})
	require.NoError(t, err)
	e, err := engine.New(engine.Config{Pool: dbtest.NewPool(t), Specs: set, Registry: reg, Runners: []runners.Runner{anyRunner{types: []string{"cloudy"}}},
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Empty(t, e.Unserved())
	require.Contains(t, e.Capabilities(), runners.Pair{Mode: wftype.ModeAsync, TaskType: "cloudy"})
}
