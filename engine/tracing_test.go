package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/internal/tracing"
)

// tracingSpecs: an exec task that prints the TRACEPARENT it was given, an
// http task whose endpoint the test serves, and a subscription that turns
// a thing.happened event into an exec task.
const tracingSpecs = `kind: TaskType
name: traced_exec
description: Prints its TRACEPARENT.
handler:
  exec:
    command: ["sh", "-c", "printf '{\"traceparent\": \"%s\"}' \"$TRACEPARENT\""]
---
kind: TaskType
name: traced_http
description: Calls the test's endpoint.
handler:
  http: {url: "ENDPOINT"}
---
kind: Subscription
name: traced-things
event_type: thing.happened
task_type: traced_exec
`

// startTracedEngine runs an engine over specs with tp as its tracer
// provider until the test ends.
func startTracedEngine(t *testing.T, pool *pgxpool.Pool, specs string, tp trace.TracerProvider) *engine.Engine {
	t.Helper()
	set, err := spec.Compile([]spec.Source{{Name: "tracing.yaml", Data: []byte(specs)}}, spec.Options{})
	require.NoError(t, err)
	e, err := engine.New(engine.Config{
		Name: "traced", Pool: pool, Specs: set, PollInterval: 100 * time.Millisecond, TracerProvider: tp,
		Logger: warnLogger(),
	})
	require.NoError(t, err)
	inproc.Go(t, e.Run)
	return e
}

// waitTasks waits until n tasks are COMPLETED and none is live.
func waitTasks(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		var done, live int
		require.NoError(t, pool.QueryRow(context.Background(), `
SELECT count(*) FILTER (WHERE status = 'COMPLETED'), count(*) FILTER (WHERE status IN ('PENDING', 'ACTIVE'))
FROM tasks.tasks`).Scan(&done, &live))
		return done == n && live == 0
	}, 60*time.Second, 20*time.Millisecond)
}

// TestTracingFollowsTasksAndEvents: with a tracer provider (an in-memory
// exporter), the trace of the enqueuing code's span runs through the
// database into the engine: each task gets wf.enqueue, wf.claim, wf.run and
// wf.finish spans in that trace; the exec runner's child sees the run
// span's context in TRACEPARENT and the http runner's endpoint in its
// traceparent header; an event emitted in the span is consumed in a
// wf.event span of the same trace, and the task its subscription creates
// runs in it too.
func TestTracingFollowsTasksAndEvents(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var headers []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.Header.Get("traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(srv.Close)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	pool := dbtest.NewPool(t)
	e := startTracedEngine(t, pool, strings.Replace(tracingSpecs, "ENDPOINT", srv.URL, 1), tp)

	ctx, root := tp.Tracer("test").Start(context.Background(), "request")
	traceID := root.SpanContext().TraceID()
	execTask, err := e.Client().Enqueue(ctx, client.Request{TaskType: "traced_exec"})
	require.NoError(t, err)
	httpTask, err := e.Client().Enqueue(ctx, client.Request{TaskType: "traced_http"})
	require.NoError(t, err)
	_, err = e.Emitter().Emit(ctx, events.Event{Type: "thing.happened"})
	require.NoError(t, err)
	root.End()
	waitTasks(t, pool, 3)

	// Every task's wf.finish span is ended once its outcome is written.
	byName := func() map[string][]sdktrace.ReadOnlySpan {
		out := map[string][]sdktrace.ReadOnlySpan{}
		for _, s := range rec.Ended() {
			out[s.Name()] = append(out[s.Name()], s)
		}
		return out
	}
	require.Eventually(t, func() bool {
		return len(byName()["wf.finish traced_exec"]) == 2 && len(byName()["wf.finish traced_http"]) == 1
	}, 30*time.Second, 20*time.Millisecond)
	spans := byName()
	for _, name := range []string{"request", "wf.enqueue traced_exec", "wf.enqueue traced_http", "wf.claim traced_exec", "wf.claim traced_http",
		"wf.run traced_exec", "wf.run traced_http", "wf.finish traced_exec", "wf.finish traced_http", "wf.event thing.happened"} {
		require.NotEmpty(t, spans[name], "no span %q; spans: %v", name, spans)
		for _, s := range spans[name] {
			require.Equal(t, traceID, s.SpanContext().TraceID(), "%s is in another trace", name)
		}
	}
	// The subscription's task was enqueued by the consumer in the event's
	// span (no wf.enqueue of its own), and its claim hangs from that span.
	require.Len(t, spans["wf.run traced_exec"], 2)
	require.Len(t, spans["wf.enqueue traced_exec"], 1)
	event := spans["wf.event thing.happened"][0]
	var fromEvent int
	for _, s := range spans["wf.claim traced_exec"] {
		if s.Parent().SpanID() == event.SpanContext().SpanID() {
			fromEvent++
		}
	}
	require.Equal(t, 1, fromEvent, "the subscribed task's claim is a child of the event's span")
	require.Equal(t, root.SpanContext().SpanID(), event.Parent().SpanID(), "the event's span is a child of the emitting span")
	require.Len(t, rec.Ended(), 1+2+3*3+1, "request, 2 enqueues, claim+run+finish of 3 tasks, 1 event")

	// The exec child saw its run span's context; the endpoint too.
	var runs = map[string]trace.SpanContext{}
	for _, s := range append(spans["wf.run traced_exec"], spans["wf.run traced_http"]...) {
		for _, a := range s.Attributes() {
			if a.Key == "wf.task_id" {
				runs[a.Value.AsString()] = s.SpanContext()
			}
		}
	}
	got, err := e.Store().GetTask(context.Background(), execTask.Task.ID)
	require.NoError(t, err)
	var out struct{ Traceparent string }
	require.NoError(t, json.Unmarshal(got.Outputs, &out))
	require.Equal(t, tracing.Traceparent(trace.ContextWithSpanContext(context.Background(), runs[execTask.Task.ID.String()])), out.Traceparent)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{tracing.Traceparent(trace.ContextWithSpanContext(context.Background(), runs[httpTask.Task.ID.String()]))}, headers)
}

// TestTracingOffStoresNothing: without a tracer provider nothing is traced
// and no trace context is stored, even when the caller's context holds a
// span (tracing on elsewhere in the process).
func TestTracingOffStoresNothing(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	e := startTracedEngine(t, pool, strings.Replace(tracingSpecs, "ENDPOINT", "http://127.0.0.1:9", 1), nil)
	rec := tracetest.NewSpanRecorder()
	ctx, root := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test").Start(context.Background(), "request")
	defer root.End()
	_, err := e.Client().Enqueue(ctx, client.Request{TaskType: "traced_exec"})
	require.NoError(t, err)
	_, err = e.Emitter().Emit(ctx, events.Event{Type: "thing.happened"})
	require.NoError(t, err)
	waitTasks(t, pool, 2)
	var stored int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM tasks.tasks WHERE traceparent IS NOT NULL`).Scan(&stored))
	require.Zero(t, stored)
	require.Empty(t, rec.Ended(), "tracing off: the engine started no span")
}
