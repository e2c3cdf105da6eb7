package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a clock that moves only when told to (Advance, Set); its timers
// and tickers fire when it moves past their time, so a test moves leases,
// heartbeats and deadlines without waiting for them. It is safe for
// concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiting []*fakeWaiter
	// added is closed, and replaced, whenever a timer or ticker starts to
	// wait (AwaitWaiters).
	added chan struct{}
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start, added: make(chan struct{})} }

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

// Advance moves the clock forward by d and fires the timers and tickers
// whose time has come.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.fire()
}

// Set moves the clock to t and fires the timers and tickers whose time has
// come.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
	f.fire()
}

// Waiters is how many timers and tickers wait on the clock now.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiting)
}

// AwaitWaiters returns once at least n timers and tickers wait on the clock,
// or with ctx's error: a test that is about to Advance waits here until the
// code under test is waiting for that time, so the move is not missed.
func (f *Fake) AwaitWaiters(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		have, added := len(f.waiting), f.added
		f.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-added:
		}
	}
}

// NewTimer implements Clock.
func (f *Fake) NewTimer(d time.Duration) Timer {
	w := &fakeWaiter{f: f, c: make(chan time.Time, 1)}
	w.Reset(d)
	return w
}

// NewTicker implements Clock.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker") // as time.NewTicker
	}
	w := &fakeWaiter{f: f, c: make(chan time.Time, 1), period: d}
	w.Reset(d)
	return (*fakeTicker)(w)
}

// After implements Clock.
func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

// fire delivers the time to every waiter due by now; f.mu is held.
func (f *Fake) fire() {
	f.waiting = slices.DeleteFunc(f.waiting, func(w *fakeWaiter) bool {
		if w.when.After(f.now) {
			return false
		}
		select {
		case w.c <- f.now:
		default: // a tick not yet received: this one is missed
		}
		if w.period <= 0 {
			return true
		}
		for !w.when.After(f.now) {
			w.when = w.when.Add(w.period)
		}
		return false
	})
}

// fakeWaiter is a timer (period 0) or a ticker of a Fake.
type fakeWaiter struct {
	f      *Fake
	c      chan time.Time
	when   time.Time
	period time.Duration
}

// C implements Timer.
func (w *fakeWaiter) C() <-chan time.Time { return w.c }

// Stop implements Timer.
func (w *fakeWaiter) Stop() bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	return w.stop()
}

// stop forgets w and drops a time not received; f.mu is held.
func (w *fakeWaiter) stop() bool {
	i := slices.Index(w.f.waiting, w)
	if i >= 0 {
		w.f.waiting = slices.Delete(w.f.waiting, i, i+1)
	}
	select {
	case <-w.c:
	default:
	}
	return i >= 0
}

// Reset implements Timer.
func (w *fakeWaiter) Reset(d time.Duration) bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	was := w.stop()
	w.when = w.f.now.Add(d)
	w.f.waiting = append(w.f.waiting, w)
	close(w.f.added)
	w.f.added = make(chan struct{})
	w.f.fire()
	return was
}

// fakeTicker is a fakeWaiter with a period.
type fakeTicker fakeWaiter

// C implements Ticker.
func (t *fakeTicker) C() <-chan time.Time { return t.c }

// Stop implements Ticker.
func (t *fakeTicker) Stop() { (*fakeWaiter)(t).Stop() }

// Reset implements Ticker.
func (t *fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset") // as time.Ticker
	}
	w := (*fakeWaiter)(t)
	w.f.mu.Lock()
	w.period = d
	w.f.mu.Unlock()
	w.Reset(d)
}
