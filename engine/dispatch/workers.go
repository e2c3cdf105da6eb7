package dispatch

import (
	"context"
	"time"

	"github.com/wfhq/wf/engine/execution"
)

// workerIdle is how long a worker goroutine waits for another task before it
// exits.
const workerIdle = 5 * time.Second

// spawn runs fn on an idle worker goroutine, or on a new one when none is
// idle. Workers are reused from task to task, so a short task costs neither
// a goroutine start nor the growth of a fresh stack; at most Slots of them
// exist, since at most Slots tasks run, and an idle one exits after
// workerIdle.
func (d *Dispatcher) spawn(fn func()) {
	select {
	case d.jobs <- fn:
	default:
		go d.worker(fn)
	}
}

func (d *Dispatcher) worker(fn func()) {
	// Wall time: how long an idle goroutine is kept is the process's
	// business, not a time the engine reckons with (a test's clock that
	// never moves would keep every goroutine forever).
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(workerIdle)
		select {
		case fn = <-d.jobs:
		case <-idle.C:
			return
		}
	}
}

// watchDeadlines cancels the runs whose run timeout passed, with the cause
// execution.ErrTimeout. One timer, set to the earliest deadline, serves every run: a
// timer per task (context.WithTimeout) costs an allocation, a timer and a
// channel for each task, most of which never fire. start wakes the watcher
// only when a run's deadline comes before the one it waits for.
func (d *Dispatcher) watchDeadlines(ctx context.Context) {
	timer := d.cfg.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := d.cfg.Clock.Now()
		var overdue []*run
		var next time.Time
		d.mu.Lock()
		for _, r := range d.running {
			switch {
			case r.ended, r.queued: // done, or not started (no deadline yet)
			case !r.deadline.After(now):
				overdue = append(overdue, r)
			case next.IsZero() || r.deadline.Before(next):
				next = r.deadline
			}
		}
		d.nextDeadline = next
		d.mu.Unlock()
		for _, r := range overdue {
			r.cancel(execution.ErrTimeout)
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = next.Sub(now)
		}
		timer.Reset(wait)
		if !next.IsZero() && !d.cfg.Clock.Now().Before(next) {
			// The clock moved past the deadline while the timer was set (a
			// test's clock can jump): the timer would wait too long.
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		case <-d.deadlineWaker.C():
		}
	}
}
