// Package clock lets tests own time. Services read the time from a Clock; in
// production it is the wall clock and statements use the database's now(), in
// tests a Fake moves only when the test says so.
package clock

import (
	"sync"
	"time"
)

// Clock is the time source of a service.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// DBNow is the time to hand to store statements: nil means "use the
	// database's now()", which keeps many instances on one clock.
	DBNow() *time.Time
}

// Real is the wall clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

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
