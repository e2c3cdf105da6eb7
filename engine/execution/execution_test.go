package execution_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// funcRunner runs every task with fn.
type funcRunner struct {
	fn     func(ctx context.Context, task *wftype.Task, rep reporters.Reporter) (json.RawMessage, error)
	remote bool
}

func (r funcRunner) Name() string                                { return "func" }
func (r funcRunner) Priority() int                               { return 100 }
func (r funcRunner) CanHandle(wftype.ExecutionMode, string) bool { return true }
func (r funcRunner) RunsRemotely() bool                          { return r.remote }
func (r funcRunner) Run(ctx context.Context, t *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
	return r.fn(ctx, t, rep)
}

// finishing is a reporter whose Finish records the context it got and
// returns a report URL.
type finishing struct {
	finished  bool
	ctxErr    error
	records   int
	finishErr error
}

func (f *finishing) Report(context.Context, reporters.Envelope) error { f.records++; return nil }
func (f *finishing) Finish(ctx context.Context) (map[string]any, error) {
	f.finished, f.ctxErr = true, ctx.Err()
	return map[string]any{"report_url": "file:///r.ndjson"}, f.finishErr
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func task() *wftype.Task {
	return &wftype.Task{TaskType: "t", ExecutionMode: wftype.ModeAsync, MaxRetries: 3}
}

func TestExecute(t *testing.T) {
	t.Parallel()
	t.Run("OutputsJoinTheReport", func(t *testing.T) {
		t.Parallel()
		rep := &finishing{}
		out, err := execution.Execute(context.Background(), execution.Run{
			Task: task(), Logger: quiet,
			Runner: funcRunner{fn: func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
				return json.RawMessage(`{"n":1}`), nil
			}},
			Reporters: func(*wftype.Task) (reporters.Reporter, error) { return rep, nil },
		})
		require.NoError(t, err)
		require.JSONEq(t, `{"n":1,"report_url":"file:///r.ndjson"}`, string(out))
		require.True(t, rep.finished)
	})
	t.Run("PanicBecomesAnError", func(t *testing.T) {
		t.Parallel()
		_, err := execution.Execute(context.Background(), execution.Run{Task: task(), Logger: quiet,
			Runner: funcRunner{fn: func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) { panic("boom") }}})
		require.ErrorContains(t, err, "runner panicked: boom")
		require.False(t, wftype.IsPermanent(err))
	})
	t.Run("NoRunnerFailsForGood", func(t *testing.T) {
		t.Parallel()
		_, err := execution.Execute(context.Background(), execution.Run{Task: task()})
		require.True(t, wftype.IsPermanent(err))
	})
	t.Run("TimeoutIsTheCauseAndTheReportIsStillWritten", func(t *testing.T) {
		t.Parallel()
		rep := &finishing{}
		_, err := execution.Execute(context.Background(), execution.Run{
			Task: task(), Timeout: time.Millisecond, Logger: quiet,
			Runner: funcRunner{fn: func(ctx context.Context, _ *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}},
			Reporters: func(*wftype.Task) (reporters.Reporter, error) { return rep, nil },
		})
		require.ErrorIs(t, err, execution.ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.True(t, rep.finished)
		require.NoError(t, rep.ctxErr, "the reporters finish on a context the run's end does not cancel")
	})
	t.Run("CauseOfACancelledRun", func(t *testing.T) {
		t.Parallel()
		lost := errors.New("lease lost")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(lost)
		_, err := execution.Execute(ctx, execution.Run{Task: task(),
			Runner: funcRunner{fn: func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) { return nil, nil }}})
		require.ErrorIs(t, err, lost, "a run that returns nil after its context ended did not finish")
	})
	t.Run("FailedReportFailsTheRun", func(t *testing.T) {
		t.Parallel()
		rep := &finishing{finishErr: errors.New("bucket gone")}
		_, err := execution.Execute(context.Background(), execution.Run{Task: task(),
			Runner:    funcRunner{fn: func(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) { return nil, nil }},
			Reporters: func(*wftype.Task) (reporters.Reporter, error) { return rep, nil },
		})
		require.ErrorContains(t, err, "error finishing reports: bucket gone")
	})
	t.Run("RemoteRunnerGetsNoReporter", func(t *testing.T) {
		t.Parallel()
		called := false
		_, err := execution.Execute(context.Background(), execution.Run{Task: task(),
			Runner: funcRunner{remote: true, fn: func(_ context.Context, _ *wftype.Task, rep reporters.Reporter) (json.RawMessage, error) {
				require.Equal(t, reporters.Discard{}, rep)
				return nil, nil
			}},
			Reporters: func(*wftype.Task) (reporters.Reporter, error) { called = true; return &finishing{}, nil },
		})
		require.NoError(t, err)
		require.False(t, called)
	})
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rule := execution.Rule{Backoff: func(n int) time.Duration { return time.Duration(n+1) * time.Minute }}
	tk := task()
	tk.RetryCount = 1

	o := execution.Outcome(tk, rule, nil, errors.New("down"), now)
	require.Equal(t, wftype.StatusPending, o.Status)
	require.Equal(t, 2, o.RetryCount)
	require.Equal(t, 2*time.Minute, o.RetryIn)
	require.Equal(t, "down", *o.Error)

	require.Equal(t, wftype.StatusFailed, execution.Outcome(tk, rule, nil, wftype.Permanent(errors.New("bad")), now).Status)
	tk.RetryCount = 3
	require.Equal(t, wftype.StatusDeadLetter, execution.Outcome(tk, rule, nil, errors.New("down"), now).Status)
	sync := &wftype.Task{ExecutionMode: wftype.ModeSync, MaxRetries: 5}
	require.Equal(t, wftype.StatusFailed, execution.Outcome(sync, rule, nil, errors.New("down"), now).Status, "a synchronous failure is never retried")
	require.Equal(t, wftype.StatusCompleted, execution.Outcome(tk, rule, nil, nil, now).Status)

	// A snooze keeps the retries, within max_snoozes, for background tasks.
	rule.MaxSnoozes = 1
	tk.RetryCount, tk.Snoozes = 1, 0
	o = execution.Outcome(tk, rule, nil, fmt.Errorf("handler: %w", wftype.Snooze(time.Minute, "busy")), now)
	require.Equal(t, wftype.StatusPending, o.Status)
	require.True(t, o.Snoozed)
	require.Equal(t, 1, o.RetryCount)
	require.Equal(t, time.Minute, o.RetryIn)
	tk.Snoozes = 1
	o = execution.Outcome(tk, rule, nil, wftype.Snooze(time.Minute, "busy"), now)
	require.False(t, o.Snoozed, "past max_snoozes")
	require.Equal(t, 2, o.RetryCount)
	require.Equal(t, wftype.StatusFailed, execution.Outcome(sync, rule, nil, wftype.Snooze(time.Minute, ""), now).Status,
		"a synchronous run cannot be put off: its caller is waiting")

	long := execution.Outcome(tk, rule, nil, errors.New(string(make([]byte, execution.MaxErrorLen+10))), now)
	require.Len(t, *long.Error, execution.MaxErrorLen+len("…"))

	// The outcome is of the claim that ran: written only while the task
	// is still on that attempt (store.Finish.Attempt).
	tk.Attempts = 3
	require.Equal(t, 3, execution.Outcome(tk, rule, nil, nil, now).Attempt)
}

func TestRules(t *testing.T) {
	t.Parallel()
	pair := runners.Pair{Mode: wftype.ModeAsync, TaskType: "t"}
	rules := execution.Rules{pair: {Lease: time.Minute, Backoff: func(int) time.Duration { return time.Second }}}
	r := rules.For(task())
	require.Equal(t, pair, r.Pair)
	require.Equal(t, time.Minute, r.Lease)
	require.Equal(t, execution.DefaultTimeout, r.Timeout)
	require.Equal(t, time.Second, rules.Backoff("t")(7))

	other := rules.For(&wftype.Task{TaskType: "gone", ExecutionMode: wftype.ModeAsync})
	require.Equal(t, execution.DefaultLease, other.Lease)
	for range 100 {
		// One default policy: never more than an hour, jitter included.
		require.LessOrEqual(t, other.Backoff(30), time.Hour)
		require.LessOrEqual(t, rules.Backoff("gone")(30), time.Hour)
	}
}

func TestMergeOutputs(t *testing.T) {
	t.Parallel()
	out, err := execution.MergeOutputs(json.RawMessage(`[1,2]`), map[string]any{"u": "x"})
	require.NoError(t, err)
	require.JSONEq(t, `{"result":[1,2],"u":"x"}`, string(out))
	out, err = execution.MergeOutputs(json.RawMessage(`{"a":1}`), nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(out))
}
