// Package clock lets tests own time. Services read the time from a Clock; in
// production it is the wall clock and statements use the database's now(), in
// tests a Fake moves only when the test says so.
//
// The whole suite can also run as if it were another date (make test-dates):
// WF_TEST_NOW moves the wall clock of every wf process (Now, Real) by a fixed
// offset, while the test PostgreSQL runs under libfaketime moved by the same
// offset, so Go and every SQL now() agree and time keeps running.
package clock

import (
	"fmt"
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

// Clock is the time source of a service.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// DBNow is the time to hand to store statements: nil means "use the
	// database's now()", which keeps many instances on one clock.
	DBNow() *time.Time
}

// Real is the wall clock (moved by WF_TEST_NOW in test runs, see Now).
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return Now() }

// DBNow implements Clock: the database's own clock.
func (Real) DBNow() *time.Time { return nil }

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// DBNow implements Clock: statements see the fake time too.
func (f *Fake) DBNow() *time.Time {
	t := f.Now()
	return &t
}

// Advance moves the clock forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// Set moves the clock to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}
