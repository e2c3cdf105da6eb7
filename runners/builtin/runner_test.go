package builtin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/runners/runnertest"
	"github.com/wfhq/wf/wftype"
)

// quietLogger drops log lines so test output stays readable.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestSuite(t *testing.T) {
	t.Parallel()
	runnertest.Run(t, runnertest.Harness{Mode: wftype.ModeAsync, NewRunner: func(t *testing.T) runners.Runner { return runnertest.NewBuiltin(t) }})
}

func TestRegistry(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"fail", "noop", "sleep"}, builtin.Names())
		require.Equal(t, builtin.Names(), builtin.NewRegistry().Names())
		_, ok := builtin.NewRegistry().Lookup("noop")
		require.True(t, ok)
		_, ok = builtin.NewRegistry().Lookup("nope")
		require.False(t, ok)
	})

	t.Run("DuplicateRefused", func(t *testing.T) {
		t.Parallel()
		reg := builtin.NewRegistry()
		require.NoError(t, reg.Register("custom", builtin.Noop))
		err := reg.Register("custom", builtin.Noop)
		require.ErrorContains(t, err, `"custom"`)
		require.ErrorContains(t, err, "already registered")
		require.ErrorContains(t, reg.Register("noop", builtin.Noop), "already registered")
		require.Equal(t, []string{"custom", "fail", "noop", "sleep"}, reg.Names())
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		reg := builtin.NewRegistry()
		require.ErrorContains(t, reg.Register("", builtin.Noop), "name is empty")
		require.ErrorContains(t, reg.Register("x", nil), "nil")
	})

	t.Run("Independent", func(t *testing.T) {
		t.Parallel()
		a, b := builtin.NewRegistry(), builtin.NewRegistry()
		require.NoError(t, a.Register("only_in_a", builtin.Noop))
		_, ok := b.Lookup("only_in_a")
		require.False(t, ok)
	})

	t.Run("ConcurrentUse", func(t *testing.T) {
		t.Parallel()
		reg := builtin.NewRegistry()
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				_ = reg.Register(string(rune('a'+i)), builtin.Noop)
				_, _ = reg.Lookup("noop")
				_ = reg.Names()
			})
		}
		wg.Wait()
		require.Len(t, reg.Names(), 23)
	})
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("UnknownHandler", func(t *testing.T) {
		t.Parallel()
		_, err := builtin.New(builtin.Config{Handlers: map[string]string{"ingest": "nope"}})
		require.ErrorContains(t, err, `task type "ingest" names builtin handler "nope"`)
		require.ErrorContains(t, err, "known: fail, noop, sleep")
	})

	t.Run("DefaultRegistry", func(t *testing.T) {
		t.Parallel()
		r, err := builtin.New(builtin.Config{Handlers: map[string]string{"ping": "noop"}})
		require.NoError(t, err)
		require.True(t, r.CanHandle(wftype.ModeAsync, "ping"))
		require.False(t, r.CanHandle(wftype.ModeSync, "ping"))
		out, err := r.Run(t.Context(), task("ping", nil), reporters.Discard{})
		require.NoError(t, err)
		require.Nil(t, out)
	})
}

// task returns an ASYNCHRONOUS task of the type with the given inputs.
func task(taskType string, inputs map[string]any) *wftype.Task {
	tk := runnertest.NewTask(wftype.ModeAsync, taskType)
	tk.Inputs = nil
	if inputs != nil {
		b, err := json.Marshal(inputs)
		if err != nil {
			panic(err)
		}
		tk.Inputs = b
	}
	return tk
}

// newDefaultRunner serves the three default handlers under their own names.
func newDefaultRunner(t *testing.T) *builtin.Runner {
	t.Helper()
	r, err := builtin.New(builtin.Config{
		Handlers: map[string]string{"noop": "noop", "sleep": "sleep", "fail": "fail"},
		Logger:   quietLogger(),
	})
	require.NoError(t, err)
	return r
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var mu sync.Mutex
	reg := builtin.NewRegistry()
	require.NoError(t, reg.Register("boom", func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
		panic("kaboom")
	}))
	r, err := builtin.New(builtin.Config{
		Registry: reg,
		Handlers: map[string]string{"explode": "boom"},
		Logger:   slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil)),
	})
	require.NoError(t, err)

	out, err := r.Run(t.Context(), task("explode", nil), reporters.Discard{})
	require.Nil(t, out)
	require.ErrorContains(t, err, `builtin handler "boom"`)
	require.ErrorContains(t, err, "handler panicked: kaboom")
	require.NotContains(t, err.Error(), "goroutine", "no stack in the error a user sees")
	require.False(t, wftype.IsPermanent(err), "a panic is retried, then dead-lettered for a person")

	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, logs.String(), "builtin handler panicked")
	require.Contains(t, logs.String(), "goroutine", "the stack goes to the log")
}

// lockedWriter serialises writes to a buffer the test reads.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestSleep(t *testing.T) {
	t.Parallel()

	t.Run("Sleeps", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		out, err := newDefaultRunner(t).Run(t.Context(), task("sleep", map[string]any{"duration": "20ms"}), reporters.Discard{})
		require.NoError(t, err)
		require.Nil(t, out)
		require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	})

	t.Run("HonoursCancel", func(t *testing.T) {
		t.Parallel()
		r := newDefaultRunner(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := r.Run(ctx, task("sleep", map[string]any{"duration": "1h"}), reporters.Discard{})
			done <- err
		}()
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
			require.False(t, wftype.IsPermanent(err))
		case <-time.After(10 * time.Second):
			t.Fatal("sleep did not return after cancel")
		}
	})

	for name, inputs := range map[string]map[string]any{
		"BadDuration":     {"duration": "soon"},
		"MissingDuration": {},
		"Negative":        {"duration": "-1s"},
		"UnknownField":    {"duration": "1s", "durtion": "2s"},
		"WrongType":       {"duration": 5},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := newDefaultRunner(t).Run(t.Context(), task("sleep", inputs), reporters.Discard{})
			require.ErrorContains(t, err, "sleep inputs")
			require.True(t, wftype.IsPermanent(err), "bad inputs are permanent: %v", err)
		})
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	r := newDefaultRunner(t)

	_, err := r.Run(t.Context(), task("fail", map[string]any{"message": "disk on fire"}), reporters.Discard{})
	require.ErrorContains(t, err, "disk on fire")
	require.False(t, wftype.IsPermanent(err))

	_, err = r.Run(t.Context(), task("fail", map[string]any{"message": "bad input", "permanent": true}), reporters.Discard{})
	require.ErrorContains(t, err, "bad input")
	require.True(t, wftype.IsPermanent(err))

	_, err = r.Run(t.Context(), task("fail", nil), reporters.Discard{})
	require.ErrorContains(t, err, "failed as asked")
	require.False(t, wftype.IsPermanent(err))
}

func TestNoop(t *testing.T) {
	t.Parallel()
	out, err := newDefaultRunner(t).Run(t.Context(), task("noop", map[string]any{"anything": 1}), reporters.Discard{})
	require.NoError(t, err)
	require.Nil(t, out)
}
