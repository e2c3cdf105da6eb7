package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/internal/tracing/tracingtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
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

// ingestionWebhooks routes ingestion.completed to the webhook fan-out (the
// shipped specs route only catalog.* events there; an operator adds such a
// subscription for subscribers of other events).
const ingestionWebhooks = `kind: Subscription
name: ingestion-webhooks
event_type: ingestion.completed
task_type: event_dispatch
schema_name: '"system"'
inputs:
  event_id: event.event_id
  event_type: event.event_type
  scope: event.scope
  schema_name: event.schema_name
  created_at: event.created_at
  payload: event.payload
`

// TestIngestionTraceReachesWebhookDeliveries is the trace followed
// end to end with the in-memory exporter: one POST /ingestion carrying a
// traceparent, and in that one trace the request's server span, the
// ingestion's enqueue and run, the consumed ingestion.completed event, the
// event_dispatch task's run, the webhook_delivery task's enqueue and run,
// and the delivery's POST to a loopback receiver carrying a traceparent of
// that trace whose parent is the delivery's run span.
func TestIngestionTraceReachesWebhookDeliveries(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	b := setup(t, options{tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), specs: ingestionWebhooks})
	startFeatureEngine(t, b, t.TempDir())
	b.createCatalog("cat-a", "regions")
	copyFixture(t, b.tenantDir("s_cat_a"))

	var mu sync.Mutex
	var received []string // traceparent headers of the deliveries
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.Header.Get("traceparent"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	_, err := b.store.InsertWebhookSubscriber(b.ctx, store.NewWebhookSubscriber{URL: hook.URL, Secret: "whsec-0123456789",
		EventTypes: []string{"ingestion.completed"}})
	require.NoError(t, err)

	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res := b.doHeaders("POST", "/ingestion/cat-a/regions", tokClientLimited, regionsBody,
		http.Header{"Traceparent": {"00-" + traceID + "-" + parentID + "-01"}})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task := b.follow(res.json(t)["status_url"].(string), tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)
	b.idle() // the event consumed, the fan-out and the delivery run

	mu.Lock()
	require.Len(t, received, 1, "one delivery to the one subscriber")
	header := received[0]
	mu.Unlock()

	// Every span of the chain is in the request's trace.
	inTrace := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() == traceID {
			inTrace[s.Name()] = append(inTrace[s.Name()], s)
		}
	}
	one := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		require.Len(t, inTrace[name], 1, "span %q in the trace; the trace holds %v", name, keys(inTrace))
		return inTrace[name][0]
	}
	server := one("POST /ingestion/{catalog_id}/{collection_id}")
	require.Equal(t, parentID, server.Parent().SpanID().String())
	enqueue := one("wf.enqueue ingestion")
	require.Equal(t, server.SpanContext().SpanID(), enqueue.Parent().SpanID())
	run := one("wf.run ingestion")
	event := one("wf.event ingestion.completed")
	require.Equal(t, run.SpanContext().SpanID(), event.Parent().SpanID(), "the event was emitted in the run")
	one("wf.run event_dispatch")
	one("wf.enqueue webhook_delivery")
	delivery := one("wf.run webhook_delivery")
	// The receiver was handed the delivery run's context.
	require.Equal(t, "00-"+traceID+"-"+delivery.SpanContext().SpanID().String()+"-01", header)
}

// keys lists a map's keys, for a failure message.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSynchronousRunIsTracedUnderTheRequest: a SYNCHRONOUS task run in
// front of its caller is traced in the request's trace with the request's
// server span as the parent of the run: "wf.enqueue" and "wf.run" children
// of "POST /tasks", "wf.finish" (the outcome's write) a child of the run,
// and the handler sees the run's span.
func TestSynchronousRunIsTracedUnderTheRequest(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	b := setup(t, options{
		tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		registry: func(reg *builtin.Registry) {
			require.NoError(t, reg.Register("traceparent", func(ctx context.Context, _ *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
				return json.Marshal(map[string]string{"traceparent": tracing.Traceparent(ctx)})
			}))
		},
		specs: `---
kind: TaskType
name: traced_sync
description: Answers with the trace context it runs in, in front of its caller.
execution_mode: SYNCHRONOUS
api: {create: [client, admin]}
handler: {builtin: traceparent}
`,
	})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res := b.doHeaders("POST", "/tasks", tokClient, map[string]any{"task_type": "traced_sync"},
		http.Header{"Traceparent": {"00-" + traceID + "-" + parentID + "-01"}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	sub := res.json(t)
	require.Equal(t, "COMPLETED", sub["status"], string(res.body))

	spans := tracingtest.Spans(t, rec, traceID, "POST /tasks", "wf.enqueue traced_sync", "wf.run traced_sync", "wf.finish traced_sync")
	server, enqueue, run, finish := spans[0], spans[1], spans[2], spans[3]
	require.Equal(t, parentID, server.Parent().SpanID().String())
	require.Equal(t, server.SpanContext().SpanID(), enqueue.Parent().SpanID())
	require.Equal(t, server.SpanContext().SpanID(), run.Parent().SpanID(), "the request span is the parent of the run")
	require.Equal(t, run.SpanContext().SpanID(), finish.Parent().SpanID())
	require.Equal(t, map[string]any{"traceparent": "00-" + traceID + "-" + run.SpanContext().SpanID().String() + "-01"}, sub["outputs"])
}
