package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/wfhq/wf/internal/tracing"
)

func TestEnabled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "wf"}, false},
	} {
		require.Equal(t, c.want, tracing.Enabled(func(k string) string { return c.env[k] }), "%v", c.env)
	}
}

// TestFromEnv: off without an endpoint (a nil provider); the gRPC
// protocol is refused with a clear error.
func TestFromEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	tp, stop, err := tracing.FromEnv(context.Background(), "wf", "v0")
	require.NoError(t, err)
	require.Nil(t, tp)
	require.NoError(t, stop(context.Background()))

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	_, _, err = tracing.FromEnv(context.Background(), "wf", "v0")
	require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported")

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	tp, stop, err = tracing.FromEnv(context.Background(), "wf", "v0")
	require.NoError(t, err)
	require.NotNil(t, tp)
	require.NoError(t, stop(context.Background()))
}

// TestTraceparentRoundTrip: a span's traceparent, stored and read back,
// parents a span in the same trace.
func TestTraceparentRoundTrip(t *testing.T) {
	t.Parallel()
	require.Empty(t, tracing.Traceparent(context.Background()))
	require.Equal(t, context.Background(), tracing.WithTraceparent(context.Background(), ""))
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "a")
	defer span.End()
	stored := tracing.Traceparent(ctx)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, stored)
	_, child := tp.Tracer("t").Start(tracing.WithTraceparent(context.Background(), stored), "b")
	defer child.End()
	require.Equal(t, span.SpanContext().TraceID(), child.SpanContext().TraceID())
	// A malformed one is ignored.
	require.Empty(t, tracing.Traceparent(tracing.WithTraceparent(context.Background(), "00-zz")))
}
