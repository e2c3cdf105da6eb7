// Package inproc runs a command (wf's command line through cli.Main, say)
// or a service (an engine's Run) in a test's own process until the test
// ends, and waits for an HTTP server to answer.
package inproc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stopBound and readyBound bound the waits on a command: generous, for a
// loaded machine.
const (
	stopBound  = 60 * time.Second
	readyBound = 60 * time.Second
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads: what a
// command writes from its goroutine while the test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start runs main, the command called name, in a goroutine until the test
// ends, and returns its standard error as main writes it (its standard
// output is dropped). When the test ends, main's context is cancelled and
// main has a minute to return; its standard error is logged when it exited
// other than 0 or the test failed.
func Start(t testing.TB, name string, main func(ctx context.Context, stdout, stderr io.Writer) int) *Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var stderr Buffer
	done := make(chan int, 1)
	go func() { done <- main(ctx, io.Discard, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 || t.Failed() {
				t.Logf("%s exited %d:\n%s", name, code, stderr.String())
			}
		case <-time.After(stopBound):
			t.Errorf("%s did not stop within %s:\n%s", name, stopBound, stderr.String())
		}
	})
	return &stderr
}

// Go runs run in a goroutine until the test ends or stop is called,
// whichever comes first: then run's context is cancelled and stop returns
// once run has. Calling stop again does nothing more.
func Go(t testing.TB, run func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); _ = run(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// FreeAddr returns a loopback address (host:port) whose port was free a
// moment ago, for a server the test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// WaitReady waits until base+"/readyz" answers 200 OK, for up to a minute;
// the test fails with log when it does not.
func WaitReady(t testing.TB, base string, log fmt.Stringer) {
	t.Helper()
	require.Eventually(t, func() bool {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, readyBound, 50*time.Millisecond, "the server did not become ready:\n%s", log)
}
