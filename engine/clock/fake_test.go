package clock_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/internal/inproc"
)

var t0 = time.Date(2030, 1, 31, 23, 59, 59, 0, time.UTC)

// received reports whether c holds a time, and which.
func received(c <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-c:
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestFakeTimer(t *testing.T) {
	t.Parallel()
	f := clock.NewFake(t0)
	tm := f.NewTimer(time.Second)
	f.Advance(999 * time.Millisecond)
	_, ok := received(tm.C())
	require.False(t, ok, "fired before its time")
	f.Advance(time.Millisecond)
	at, ok := received(tm.C())
	require.True(t, ok, "did not fire at its time")
	require.Equal(t, t0.Add(time.Second), at)
	f.Advance(time.Hour)
	_, ok = received(tm.C())
	require.False(t, ok, "a timer fires once")
	require.Zero(t, f.Waiters())

	// Reset after firing waits again; Stop forgets it and drops a time
	// not received.
	require.False(t, tm.Reset(time.Minute))
	require.True(t, tm.Stop())
	f.Advance(time.Hour)
	_, ok = received(tm.C())
	require.False(t, ok, "a stopped timer fired")
	tm.Reset(time.Second)
	f.Advance(time.Second)
	require.False(t, tm.Reset(0))
	_, ok = received(tm.C())
	require.True(t, ok, "Reset(0) fires at once")

	// Set moves the clock too (here past a timer's time).
	late := f.NewTimer(time.Minute)
	f.Set(f.Now().Add(2 * time.Minute))
	_, ok = received(late.C())
	require.True(t, ok)

	// After, and a timer of zero, fire at once.
	_, ok = received(f.After(0))
	require.True(t, ok)
}

func TestFakeTicker(t *testing.T) {
	t.Parallel()
	f := clock.NewFake(t0)
	tk := f.NewTicker(10 * time.Second)
	defer tk.Stop()
	for i, step := range []struct {
		reset   time.Duration // when set, Reset the ticker first
		advance time.Duration
		ticks   int // how many ticks are there to receive after the move
	}{
		{advance: 9 * time.Second},
		{advance: time.Second, ticks: 1},
		// A slow receiver misses ticks rather than receiving a backlog.
		{advance: 35 * time.Second, ticks: 1},
		// The ticks keep their phase: the next is at 50 s.
		{advance: 4 * time.Second},
		{advance: time.Second, ticks: 1},
		{reset: time.Minute, advance: 59 * time.Second},
		{advance: time.Second, ticks: 1},
	} {
		if step.reset > 0 {
			tk.Reset(step.reset)
		}
		f.Advance(step.advance)
		got := 0
		for at, ok := received(tk.C()); ok; at, ok = received(tk.C()) {
			require.Equal(t, f.Now(), at, "step %d", i)
			got++
		}
		require.Equal(t, step.ticks, got, "step %d", i)
	}
	tk.Stop()
	require.Zero(t, f.Waiters())
}

// TestFakeWakesWaiters: goroutines waiting on the fake clock (Sleep) wake
// when a test moves it, and AwaitWaiters tells the test when they wait.
func TestFakeWakesWaiters(t *testing.T) {
	t.Parallel()
	f := clock.NewFake(t0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const sleepers = 20
	var wg sync.WaitGroup
	errs := make(chan error, sleepers)
	for i := range sleepers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- clock.Sleep(ctx, f, time.Duration(i+1)*time.Second)
		}()
	}
	require.NoError(t, f.AwaitWaiters(ctx, sleepers))
	f.Advance(sleepers * time.Second)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// A Sleep ends with its context.
	stopped, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(stopped, f, time.Hour) }()
	require.NoError(t, f.AwaitWaiters(ctx, 1))
	stop()
	require.ErrorIs(t, <-done, context.Canceled)

	// AwaitWaiters gives up with its context.
	short, stopShort := context.WithCancel(ctx)
	stopShort()
	require.ErrorIs(t, f.AwaitWaiters(short, 1), context.Canceled)
}

func TestRealAndSkewed(t *testing.T) {
	t.Parallel()
	var c clock.Clock = clock.Skewed{Offset: time.Hour}
	require.Nil(t, c.DBNow())
	require.WithinDuration(t, clock.Now().Add(time.Hour), c.Now(), time.Minute)
	require.NoError(t, clock.Sleep(context.Background(), c, time.Millisecond))
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
	<-c.After(time.Millisecond)
}

// TestRepeat: Repeat runs at once and then at every interval of the clock,
// with the clock's time; a failed run is logged and tried again at the next
// interval; it returns when its context ends.
func TestRepeat(t *testing.T) {
	t.Parallel()
	f := clock.NewFake(t0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var logged inproc.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	runs := make(chan time.Time)
	stopped, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		clock.Repeat(stopped, f, time.Hour, log, "the run failed", func(now time.Time) error {
			select {
			case runs <- now:
			case <-ctx.Done():
			}
			if now.Equal(t0) {
				return errors.New("boom")
			}
			return nil
		})
	}()
	next := func() time.Time {
		select {
		case at := <-runs:
			return at
		case <-ctx.Done():
			t.Fatal("no run")
			return time.Time{}
		}
	}
	require.Equal(t, t0, next())
	require.NoError(t, f.AwaitWaiters(ctx, 1))
	require.Contains(t, logged.String(), `msg="the run failed" err=boom`)
	f.Advance(time.Hour)
	require.Equal(t, t0.Add(time.Hour), next())
	f.Advance(time.Hour)
	require.Equal(t, t0.Add(2*time.Hour), next())
	require.Equal(t, 1, strings.Count(logged.String(), "the run failed"))
	stop()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Repeat did not return when its context ended")
	}
}
