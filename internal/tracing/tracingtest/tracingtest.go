// Package tracingtest finds the spans a test's tracer provider ended, for
// the tests that check how a trace runs through wf.
package tracingtest

import (
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Spans returns the ended span of each name, in the order of names, after
// checking that rec holds one of each and that all are in the trace
// traceID (hex). When several spans share a name, the last one counts.
func Spans(t testing.TB, rec *tracetest.SpanRecorder, traceID string, names ...string) []sdktrace.ReadOnlySpan {
	t.Helper()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = s
	}
	out := make([]sdktrace.ReadOnlySpan, len(names))
	for i, name := range names {
		s := byName[name]
		require.NotNil(t, s, "no span %q: %v", name, byName)
		require.Equal(t, traceID, s.SpanContext().TraceID().String(), name)
		out[i] = s
	}
	return out
}
