// Package runnertest is the one test suite every runners.Runner must pass, in
// the manner of River's driver test suite: each runner package builds a
// runner that knows the five task types below (through a Harness) and calls
// Run from its own test. Behaviour that all runners promise (capabilities,
// outputs, retryable versus permanent failures, prompt cancellation, records
// in order, isolation of concurrent runs) is therefore checked once, the same
// way, for every kind of runner.
package runnertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// The task types a harness must wire, one per behaviour the suite exercises.
const (
	// TypeSucceed returns the outputs SucceedOutputs and no error.
	TypeSucceed = "runnertest.succeed"
	// TypeFailRetryable returns an error that is not wftype.Permanent.
	TypeFailRetryable = "runnertest.fail_retryable"
	// TypeFailPermanent returns an error for which wftype.IsPermanent is true.
	TypeFailPermanent = "runnertest.fail_permanent"
	// TypeBlock runs until its context is done, then returns an error.
	TypeBlock = "runnertest.block"
	// TypeRecords reports the three envelopes of Records, in order, and succeeds.
	TypeRecords = "runnertest.records"
)

// SucceedOutputs is the JSON that tasks of TypeSucceed return.
const SucceedOutputs = `{"ok":true}`

// unknownType is a task type no harness knows.
const unknownType = "runnertest.unknown"

// cancelBound is how long a runner may take to return once its context is
// done. It is generous on purpose: the check is that Run returns at all, not
// that it is fast on a loaded CI machine.
const cancelBound = 10 * time.Second

// TaskTypes returns the five task types a harness must wire.
func TaskTypes() []string {
	return []string{TypeSucceed, TypeFailRetryable, TypeFailPermanent, TypeBlock, TypeRecords}
}

// Records returns the three envelopes that tasks of TypeRecords report, in
// order: one of each status. Each call returns a fresh copy.
func Records() []reporters.Envelope {
	rejected, failed := "missing name", "geometry is invalid"
	feature := func(id, name string, stats, system map[string]any) reporters.Record {
		return reporters.Record{Type: "Feature", ID: id, Properties: map[string]any{"name": name}, Stats: stats, System: system}
	}
	return []reporters.Envelope{
		{Status: reporters.RecordSuccess, Record: feature("r1", "first", map[string]any{}, map[string]any{})},
		{Status: reporters.RecordRejected, Message: &rejected, Record: feature("r2", "", map[string]any{}, map[string]any{})},
		{Status: reporters.RecordFailed, Message: &failed,
			Record: feature("r3", "third", map[string]any{"bytes": "12"}, map[string]any{"stage": "load"})},
	}
}

// HandlerFunc is the shape of an in-process handler; it is an alias so that a
// value of it is assignable to a runner's own named handler type (such as
// builtin.Handler) without a conversion.
type HandlerFunc = func(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error)

// Handlers returns in-process implementations of the five behaviours, keyed by
// task type, for harnesses of runners that run Go code (builtin, and the
// synchronous runner wrapping it).
func Handlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		TypeSucceed: func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
			return json.RawMessage(SucceedOutputs), nil
		},
		TypeFailRetryable: func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
			return nil, errors.New("the backend is temporarily unavailable")
		},
		TypeFailPermanent: func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
			return nil, wftype.Permanent(errors.New("the inputs are invalid"))
		},
		TypeBlock: func(ctx context.Context, _ *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, fmt.Errorf("error waiting to be cancelled: %w", ctx.Err())
		},
		TypeRecords: func(ctx context.Context, _ *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
			for _, env := range Records() {
				if err := rep.Report(ctx, env); err != nil {
					return nil, fmt.Errorf("error reporting record: %w", err)
				}
			}
			return nil, nil
		},
	}
}

// NewBuiltin returns a builtin runner serving the suite's task types with
// Handlers (the builtin runner's own suite, and runners that wrap it).
func NewBuiltin(t *testing.T) *builtin.Runner {
	t.Helper()
	reg := builtin.NewRegistry()
	handlers := map[string]string{}
	for taskType, h := range Handlers() {
		require.NoError(t, reg.Register(taskType, h))
		handlers[taskType] = taskType
	}
	r, err := builtin.New(builtin.Config{Registry: reg, Handlers: handlers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	return r
}

// Harness tells the suite how to build the runner under test.
type Harness struct {
	// Mode is the execution mode the runner serves for the five task types
	// (wftype.ModeAsync for handler runners, wftype.ModeSync for the
	// synchronous runner).
	Mode wftype.ExecutionMode
	// NewRunner builds a runner that knows the five Type* task types. The suite
	// calls it once per check, so checks do not share state; clean-up goes to
	// t.Cleanup.
	NewRunner func(t *testing.T) runners.Runner
	// SkipRecords, when not empty, says why the runner has no per-record
	// channel; the checks that need TypeRecords are skipped with that reason.
	SkipRecords string
}

// Recorder is a reporters.Reporter that keeps every envelope in memory, for
// tests. It is safe for concurrent use.
type Recorder struct {
	mu        sync.Mutex
	envelopes []reporters.Envelope
}

// Report implements reporters.Reporter.
func (r *Recorder) Report(_ context.Context, env reporters.Envelope) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.envelopes = append(r.envelopes, env)
	return nil
}

// Finish implements reporters.Reporter; it adds nothing to the outputs.
func (r *Recorder) Finish(context.Context) (map[string]any, error) {
	return nil, nil
}

// Envelopes returns a copy of the envelopes reported so far, in order.
func (r *Recorder) Envelopes() []reporters.Envelope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reporters.Envelope(nil), r.envelopes...)
}

// ByStatus counts the envelopes reported so far by record status.
func (r *Recorder) ByStatus() map[reporters.RecordStatus]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[reporters.RecordStatus]int{}
	for _, e := range r.envelopes {
		out[e.Status]++
	}
	return out
}

// Counter is a reporters.Reporter that counts envelopes and keeps none,
// for benchmarks whose millions of records a Recorder would hold. It is
// safe for concurrent use.
type Counter struct {
	mu sync.Mutex
	n  int
}

// Report implements reporters.Reporter.
func (c *Counter) Report(context.Context, reporters.Envelope) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return nil
}

// Finish implements reporters.Reporter; it adds nothing to the outputs.
func (c *Counter) Finish(context.Context) (map[string]any, error) { return nil, nil }

// Count returns how many envelopes were reported.
func (c *Counter) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// NewTask returns an ACTIVE task row of the given mode and type, as the
// dispatcher hands it to a runner.
func NewTask(mode wftype.ExecutionMode, taskType string) *wftype.Task {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return &wftype.Task{
		ID:            uuid.Must(uuid.NewV7()),
		Timestamp:     now,
		SchemaName:    "tenant_a",
		Scope:         wftype.ScopeCatalog,
		ExecutionMode: mode,
		TaskType:      taskType,
		Status:        wftype.StatusActive,
		Inputs:        json.RawMessage(`{"catalog":"roads"}`),
		MaxRetries:    3,
		Attempts:      1,
		RunAfter:      now,
		StartedAt:     &now,
	}
}

// RequireRecords fails the test unless got holds exactly want, in order,
// comparing their JSON forms (runners that cross a process or network
// boundary decode numbers and maps afresh).
func RequireRecords(t testing.TB, want, got []reporters.Envelope) {
	t.Helper()
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(wantJSON), string(gotJSON))
}

// result is what one Run call returned.
type result struct {
	outputs json.RawMessage
	err     error
}

// Run runs the whole suite against the runner the harness builds. Call it
// from the runner package's test; it runs its checks as parallel subtests.
func Run(t *testing.T, h Harness) {
	t.Helper()
	require.NotNil(t, h.NewRunner, "Harness.NewRunner is required")
	require.Contains(t, []wftype.ExecutionMode{wftype.ModeAsync, wftype.ModeSync}, h.Mode, "Harness.Mode")
	otherMode := wftype.ModeSync
	if h.Mode == wftype.ModeSync {
		otherMode = wftype.ModeAsync
	}
	run := func(ctx context.Context, r runners.Runner, taskType string, rep reporters.Reporter) (json.RawMessage, error) {
		return r.Run(ctx, NewTask(h.Mode, taskType), rep)
	}

	t.Run("Identity", func(t *testing.T) {
		t.Parallel()
		r := h.NewRunner(t)
		require.NotEmpty(t, r.Name())
		require.Positive(t, r.Priority())
	})

	t.Run("CanHandle", func(t *testing.T) {
		t.Parallel()
		r := h.NewRunner(t)
		for _, tt := range TaskTypes() {
			require.True(t, r.CanHandle(h.Mode, tt), "CanHandle(%s, %s)", h.Mode, tt)
			require.False(t, r.CanHandle(otherMode, tt), "CanHandle(%s, %s)", otherMode, tt)
		}
		require.False(t, r.CanHandle(h.Mode, unknownType), "CanHandle(%s, %s)", h.Mode, unknownType)
		require.False(t, r.CanHandle(h.Mode, ""), "CanHandle(%s, empty type)", h.Mode)
	})

	t.Run("UnknownTypeFails", func(t *testing.T) {
		t.Parallel()
		_, err := run(t.Context(), h.NewRunner(t), unknownType, reporters.Discard{})
		require.Error(t, err)
	})

	t.Run("Outputs", func(t *testing.T) {
		t.Parallel()
		out, err := run(t.Context(), h.NewRunner(t), TypeSucceed, reporters.Discard{})
		require.NoError(t, err)
		require.JSONEq(t, SucceedOutputs, string(out))
	})

	t.Run("FailRetryable", func(t *testing.T) {
		t.Parallel()
		_, err := run(t.Context(), h.NewRunner(t), TypeFailRetryable, reporters.Discard{})
		require.Error(t, err)
		require.False(t, wftype.IsPermanent(err), "error must be retryable: %v", err)
	})

	t.Run("FailPermanent", func(t *testing.T) {
		t.Parallel()
		_, err := run(t.Context(), h.NewRunner(t), TypeFailPermanent, reporters.Discard{})
		require.Error(t, err)
		require.True(t, wftype.IsPermanent(err), "error must be permanent: %v", err)
	})

	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		r := h.NewRunner(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan result, 1)
		go func() {
			out, err := run(ctx, r, TypeBlock, reporters.Discard{})
			done <- result{out, err}
		}()
		// Give the task a moment to get going; whether it has started or not,
		// it must not finish on its own.
		select {
		case res := <-done:
			t.Fatalf("Run returned before it was cancelled: %v", res.err)
		case <-time.After(100 * time.Millisecond):
		}
		cancel()
		requireCancelled(t, done)
	})

	t.Run("Deadline", func(t *testing.T) {
		t.Parallel()
		r := h.NewRunner(t)
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel()
		done := make(chan result, 1)
		go func() {
			out, err := run(ctx, r, TypeBlock, reporters.Discard{})
			done <- result{out, err}
		}()
		<-ctx.Done()
		requireCancelled(t, done)
	})

	t.Run("AlreadyCancelled", func(t *testing.T) {
		t.Parallel()
		r := h.NewRunner(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		done := make(chan result, 1)
		go func() {
			out, err := run(ctx, r, TypeBlock, reporters.Discard{})
			done <- result{out, err}
		}()
		requireCancelled(t, done)
	})

	t.Run("Records", func(t *testing.T) {
		t.Parallel()
		if h.SkipRecords != "" {
			t.Skip(h.SkipRecords)
		}
		rec := &Recorder{}
		_, err := run(t.Context(), h.NewRunner(t), TypeRecords, rec)
		require.NoError(t, err)
		RequireRecords(t, Records(), rec.Envelopes())
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		r := h.NewRunner(t)
		kinds := []string{TypeSucceed, TypeFailPermanent, TypeFailRetryable}
		if h.SkipRecords == "" {
			kinds = append(kinds, TypeRecords)
		}
		const n = 20
		type outcome struct {
			taskType string
			rec      *Recorder
			res      result
		}
		outcomes := make([]outcome, n)
		var wg sync.WaitGroup
		for i := range n {
			outcomes[i] = outcome{taskType: kinds[i%len(kinds)], rec: &Recorder{}}
			wg.Go(func() {
				out, err := run(t.Context(), r, outcomes[i].taskType, outcomes[i].rec)
				outcomes[i].res = result{out, err}
			})
		}
		wg.Wait()
		for i, o := range outcomes {
			switch o.taskType {
			case TypeSucceed:
				require.NoError(t, o.res.err, "run %d", i)
				require.JSONEq(t, SucceedOutputs, string(o.res.outputs), "run %d", i)
				require.Empty(t, o.rec.Envelopes(), "run %d", i)
			case TypeFailPermanent:
				require.True(t, wftype.IsPermanent(o.res.err), "run %d: %v", i, o.res.err)
			case TypeFailRetryable:
				require.Error(t, o.res.err, "run %d", i)
				require.False(t, wftype.IsPermanent(o.res.err), "run %d: %v", i, o.res.err)
			case TypeRecords:
				require.NoError(t, o.res.err, "run %d", i)
				RequireRecords(t, Records(), o.rec.Envelopes())
			}
		}
	})
}

// requireCancelled waits (at most cancelBound) for a run whose ctx is done and
// checks it failed retryably: a cancelled task is handed back, not failed.
func requireCancelled(t *testing.T, done <-chan result) {
	t.Helper()
	select {
	case res := <-done:
		require.Error(t, res.err, "a cancelled run must return an error")
		require.False(t, wftype.IsPermanent(res.err), "a cancelled run must not fail permanently: %v", res.err)
	case <-time.After(cancelBound):
		t.Fatalf("Run did not return within %s of its context being done", cancelBound)
	}
}
