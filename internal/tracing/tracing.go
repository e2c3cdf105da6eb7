// Package tracing is wf's OpenTelemetry tracing: a tracer provider built
// from the standard OTEL_* variables (OTLP over HTTP; off unless an OTLP
// endpoint is configured), and the W3C traceparent that carries a trace
// from the code that enqueues a task or emits an event, through the
// database, to the engine that runs it and to the process or endpoint a
// runner calls.
//
// When tracing is off the provider is OpenTelemetry's no-op one: starting
// a span costs a call and an allocation-free return, and no traceparent is
// stored, so the engine's hot paths are unchanged.
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names wf's tracer.
const InstrumentationName = "github.com/wfhq/wf"

// propagator is the W3C trace context format (traceparent, tracestate).
var propagator = propagation.TraceContext{}

// Enabled reports whether the OTEL_* variables ask for traces: an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// or OTEL_TRACES_EXPORTER=otlp, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns the tracer provider the OTEL_* variables describe, and a
// shutdown that flushes the spans still buffered. When tracing is off
// (Enabled is false) the provider is nil (wf's "tracing off") and shutdown
// does nothing.
// Only OTLP over HTTP is supported (OTEL_EXPORTER_OTLP_PROTOCOL grpc is
// refused: wf links no gRPC exporter). The service name is
// OTEL_SERVICE_NAME, else service (wf's --name); OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER and the batch processor's OTEL_BSP_* apply as the SDK
// reads them.
func FromEnv(ctx context.Context, service, version string) (trace.TracerProvider, func(context.Context) error, error) {
	if !Enabled(os.Getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(name); p != "" {
			if p != "http/protobuf" {
				return nil, nil, fmt.Errorf("error setting up tracing: %s=%s is not supported: wf exports traces over OTLP/HTTP (http/protobuf)", name, p)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("error setting up tracing: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.version", version)}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		attrs = append(attrs, attribute.String("service.name", service))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, nil, fmt.Errorf("error setting up tracing: %w", err)
	}
	// The variables (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) win.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Tracer returns wf's tracer of tp; a nil tp means tracing is off.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(InstrumentationName)
}

// Traceparent returns the W3C traceparent of the span in ctx, or "" when
// ctx holds no valid span context (tracing off, or no span).
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceparent returns ctx carrying the remote span context a stored
// traceparent names, so spans started from it join that trace; ctx itself
// when traceparent is empty or malformed.
func WithTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Extract returns ctx carrying the trace context of incoming HTTP headers
// (traceparent, tracestate).
func Extract(ctx context.Context, h propagation.HeaderCarrier) context.Context {
	return propagator.Extract(ctx, h)
}

// Inject writes the trace context of ctx into outgoing HTTP headers.
func Inject(ctx context.Context, h propagation.HeaderCarrier) {
	propagator.Inject(ctx, h)
}

// End records err on span (status Error) and ends it.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
