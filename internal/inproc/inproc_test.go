package inproc_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/inproc"
)

// TestStartRunsUntilTheTestEnds: the command runs while the subtest does,
// its standard error is readable meanwhile, and it is stopped (its context
// cancelled) and waited for when the subtest ends.
func TestStartRunsUntilTheTestEnds(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var returned atomic.Bool
	t.Run("command", func(t *testing.T) {
		stderr := inproc.Start(t, "cmd", func(ctx context.Context, _, stderr io.Writer) int {
			fmt.Fprint(stderr, "listening")
			close(started)
			<-ctx.Done()
			returned.Store(true)
			return 0
		})
		<-started
		require.Equal(t, "listening", stderr.String())
		require.False(t, returned.Load())
	})
	require.True(t, returned.Load(), "the command was waited for when its test ended")
}

// TestWaitReady waits until /readyz answers 200.
func TestWaitReady(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/readyz", r.URL.Path)
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	inproc.WaitReady(t, srv.URL, &inproc.Buffer{})
	require.Equal(t, int32(3), calls.Load())
}

// TestGo: stop cancels the service and returns once it has; the test's
// end does the same for a service still running, and a second stop does
// nothing.
func TestGo(t *testing.T) {
	t.Parallel()
	var ended atomic.Int32
	service := func(ctx context.Context) error {
		<-ctx.Done()
		ended.Add(1)
		return ctx.Err()
	}
	t.Run("stop", func(t *testing.T) {
		stop := inproc.Go(t, service)
		require.Zero(t, ended.Load())
		stop()
		require.Equal(t, int32(1), ended.Load())
		stop()
	})
	t.Run("end of the test", func(t *testing.T) {
		inproc.Go(t, service)
	})
	require.Equal(t, int32(2), ended.Load())
}
