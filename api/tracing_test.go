package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestRequestTraceReachesTheTask: with tracing on, a request that sends a
// traceparent gets a server span in that trace ("POST /tasks"), the task
// it creates is enqueued in a child span, and the task row keeps the
// enqueue span's context for the engine to continue; the health route is
// not traced. Without a traceparent the request starts a trace of its own.
func TestRequestTraceReachesTheTask(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	b := setup(t, options{tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res := b.doHeaders("POST", "/tasks", tokAdmin, map[string]any{"task_type": "noop"},
		http.Header{"Traceparent": {"00-" + traceID + "-" + parentID + "-01"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	id := uuid.MustParse(res.json(t)["task_id"].(string))
	res = b.do("GET", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, res.status)

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	require.Len(t, spans, 2, "one server span and one enqueue span: %v", spans)
	server, enqueue := spans["POST /tasks"], spans["wf.enqueue noop"]
	require.NotNil(t, server)
	require.NotNil(t, enqueue)
	require.Equal(t, traceID, server.SpanContext().TraceID().String())
	require.Equal(t, parentID, server.Parent().SpanID().String())
	require.True(t, server.Parent().IsRemote())
	require.Equal(t, server.SpanContext().SpanID(), enqueue.Parent().SpanID())
	var stored string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT traceparent FROM tasks.tasks WHERE task_id = $1`, id).Scan(&stored))
	require.Equal(t, "00-"+traceID+"-"+enqueue.SpanContext().SpanID().String()+"-01", stored)

	// No traceparent: a new trace, the server span its root.
	res = b.do("POST", "/tasks", tokAdmin, map[string]any{"task_type": "noop"})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	var roots int
	for _, s := range rec.Ended() {
		if s.Name() == "POST /tasks" && !s.Parent().IsValid() {
			roots++
			require.NotEqual(t, traceID, s.SpanContext().TraceID().String())
		}
	}
	require.Equal(t, 1, roots)
}
