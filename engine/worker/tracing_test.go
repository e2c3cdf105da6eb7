package worker_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/worker"
	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/internal/tracing/tracingtest"
	"github.com/wfhq/wf/wftype"
)

// TestRemoteWorkerContinuesTheTrace: a task enqueued in a trace and run by a
// worker that takes it by id (wf exec --task-id, a remote container) is
// claimed, run and finished in that trace: "wf.claim" and "wf.run" children
// of the enqueue span, "wf.finish" (the outcome's write) a child of the run,
// and the runner sees the run's span (the exec runner passes it on as
// TRACEPARENT). A task enqueued without tracing runs without a span.
func TestRemoteWorkerContinuesTheTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	seen := make(chan string, 2)
	b := setup(t, func(ctx context.Context, _ *wftype.Task) (json.RawMessage, error) {
		seen <- tracing.Traceparent(ctx)
		return json.RawMessage(`{}`), nil
	}, func(c *worker.Config) { c.TracerProvider = tp })

	// Enqueued by traced code (the enqueuing side's span is the parent).
	ctx, root := tp.Tracer("test").Start(t.Context(), "enqueuing code")
	res, err := client.New(b.store, b.specs).WithTracerProvider(tp).Enqueue(ctx, client.Request{TaskType: "job", Inputs: json.RawMessage(`{"key": "traced"}`)})
	require.NoError(t, err)
	root.End()
	require.NotEmpty(t, res.Task.Traceparent)

	// The worker runs in a process of its own: a context with no span.
	c, err := b.worker.Take(context.Background(), res.Task.ID, store.WorkerLease{})
	require.NoError(t, err)
	out, err := b.worker.Run(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusCompleted, out.Status)

	spans := tracingtest.Spans(t, rec, root.SpanContext().TraceID().String(), "wf.enqueue job", "wf.claim job", "wf.run job", "wf.finish job")
	enqueue, claim, run, finish := spans[0], spans[1], spans[2], spans[3]
	require.Equal(t, enqueue.SpanContext().SpanID(), claim.Parent().SpanID())
	require.Equal(t, enqueue.SpanContext().SpanID(), run.Parent().SpanID())
	require.Equal(t, run.SpanContext().SpanID(), finish.Parent().SpanID())
	require.Equal(t, "00-"+run.SpanContext().TraceID().String()+"-"+run.SpanContext().SpanID().String()+"-01", <-seen)

	// Enqueued untraced: no span, and the runner sees no trace.
	before := len(rec.Ended())
	task := b.enqueue(t, "untraced")
	require.Empty(t, task.Traceparent)
	c, err = b.worker.Take(context.Background(), task.ID, store.WorkerLease{})
	require.NoError(t, err)
	_, err = b.worker.Run(context.Background(), c)
	require.NoError(t, err)
	require.Empty(t, <-seen)
	require.Len(t, rec.Ended(), before)
}
