// Package clock lets tests own time. Services read the time from a Clock,
// and wait on its timers and tickers; in production it is the wall clock and
// statements use the database's now(), in tests a Fake moves only when the
// test says so, and its timers fire when it moves past them.
//
// The whole suite can also run as if it were another date (make test-dates):
// WF_TEST_NOW moves the wall clock of every wf process (Now, Real) by a fixed
// offset, while the test PostgreSQL runs under datefudge moved by the same
// offset, so Go and every SQL now() agree and time keeps running.
package clock

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
)

// Environment variables that move the wall clock (tests only).
const (
	// EnvTestNow holds the instant (RFC 3339) the run pretends it is when it
	// starts; the clock runs on from there.
	EnvTestNow = "WF_TEST_NOW"
	// EnvTestOffset holds the offset in whole seconds from the real wall
	// clock: internal/dbtest/withdb turns WF_TEST_NOW into it once, so every
	// process of a run (and its PostgreSQL) moves by the same amount. It
	// wins over EnvTestNow.
	EnvTestOffset = "WF_TEST_NOW_OFFSET"
)

// offset is the wall clock's offset, read from the environment once.
var offset = sync.OnceValues(func() (time.Duration, error) { return OffsetFromEnv(os.Getenv, time.Now()) })

// OffsetFromEnv returns the offset EnvTestOffset or else EnvTestNow (read
// with getenv) asks for, seen at now, in whole seconds; 0 when neither is
// set.
func OffsetFromEnv(getenv func(string) string, now time.Time) (time.Duration, error) {
	if v := getenv(EnvTestOffset); v != "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("error reading %s=%q: want whole seconds", EnvTestOffset, v)
		}
		return time.Duration(secs) * time.Second, nil
	}
	v := getenv(EnvTestNow)
	if v == "" {
		return 0, nil
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0, fmt.Errorf("error reading %s=%q: want an RFC 3339 time such as 2028-02-29T23:59:59+01:00", EnvTestNow, v)
	}
	return at.Sub(now).Round(time.Second), nil
}

// Offset is the wall clock's offset from the real one: 0 unless a test run
// set WF_TEST_NOW (see OffsetFromEnv), or when that is malformed (CheckEnv
// says so: wf and the test helpers refuse to start then).
func Offset() time.Duration {
	d, _ := offset()
	return d
}

// CheckEnv returns the error of a malformed WF_TEST_NOW or
// WF_TEST_NOW_OFFSET: a run that meant to be on another date must not run
// on today's.
func CheckEnv() error {
	_, err := offset()
	return err
}

// Now is the wall clock, moved by WF_TEST_NOW when a test run set it. Code
// that needs "now" to compare with the database's times reads it here (or
// from a Clock), never from time.Now.
func Now() time.Time {
	if d := Offset(); d != 0 {
		return time.Now().Add(d)
	}
	return time.Now()
}

// Clock is the time source of a service: what time it is, and the waits
// measured in that time (leases, heartbeats, deadlines, retry pauses), so
// that a test that moves a Fake moves them too.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// DBNow is the time to hand to store statements: nil means "use the
	// database's now()", which keeps many instances on one clock.
	DBNow() *time.Time
	// NewTimer returns a timer that fires once d has passed on this clock
	// (at once when d <= 0).
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that fires every d (> 0) on this clock.
	NewTicker(d time.Duration) Ticker
	// After fires once d has passed on this clock, as time.After does.
	After(d time.Duration) <-chan time.Time
}

// Timer fires once, as a time.Timer does (with Go 1.23's semantics: after
// Stop or Reset returns, no stale time is received).
type Timer interface {
	// C delivers the time at which the timer fired.
	C() <-chan time.Time
	// Stop stops the timer; it reports whether the timer was still waiting.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether the timer
	// was still waiting.
	Reset(d time.Duration) bool
}

// Ticker fires every period, as a time.Ticker does: a slow receiver misses
// ticks rather than receiving a backlog of them.
type Ticker interface {
	// C delivers the times of the ticks.
	C() <-chan time.Time
	// Stop stops the ticker.
	Stop()
	// Reset makes the ticker fire every d (> 0) from now.
	Reset(d time.Duration)
}

// Sleep waits d on c, or until ctx ends (then it returns ctx's error).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// Every calls fn every d on c, until ctx ends or fn returns false; the
// first call comes d after Every starts. It is the loop of a service that
// does one thing per interval (a heartbeat, maintenance).
func Every(ctx context.Context, c Clock, d time.Duration, fn func() bool) {
	t := c.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if !fn() {
			return
		}
	}
}

// Repeat calls run with c's time at once and then every d on c (see
// Every) until ctx ends: the loop of a leader service that works when it
// starts and then once per interval (maintenance, the tile cache pruner). A
// run that fails is logged on log as a warning with msg and tried again at
// the next interval; one that failed because ctx ended is not logged.
func Repeat(ctx context.Context, c Clock, d time.Duration, log *slog.Logger, msg string, run func(now time.Time) error) {
	once := func() bool {
		if err := run(c.Now()); err != nil && ctx.Err() == nil {
			log.Warn(msg, "err", err)
		}
		return true
	}
	once()
	Every(ctx, c, d, once)
}

// Or is c, or the wall clock (Real) when c is nil: a service's default.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Real is the wall clock (moved by WF_TEST_NOW in test runs, see Now).
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return Now() }

// DBNow implements Clock: the database's own clock.
func (Real) DBNow() *time.Time { return nil }

// NewTimer implements Clock with a time.Timer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTicker implements Clock with a time.Ticker.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

// After implements Clock with time.After.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }

// Skewed is the wall clock off by Offset, with statements on the database's
// clock, as a host whose clock drifted from the database's (tests of what
// must follow the database's clock). Its waits are the wall clock's.
type Skewed struct {
	Real
	// Offset is how far the host's clock is ahead of the database's.
	Offset time.Duration
}

// Now implements Clock.
func (s Skewed) Now() time.Time { return Now().Add(s.Offset) }
