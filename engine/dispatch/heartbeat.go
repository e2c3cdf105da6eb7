package dispatch

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
)

// heartbeat extends the leases of every running task once per interval, in
// one statement, and cancels the tasks whose lease is gone.
func (d *Dispatcher) heartbeat(ctx context.Context) {
	clock.Every(ctx, d.cfg.Clock, d.cfg.HeartbeatInterval, func() bool {
		if err := d.beat(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("heartbeat failed; retrying at the next interval", "err", err)
		}
		return true
	})
}

func (d *Dispatcher) beat(ctx context.Context) error {
	now := d.cfg.Clock.Now()
	d.mu.Lock()
	leases := make([]store.Lease, 0, len(d.running))
	runs := make([]*run, 0, len(d.running))
	for id, r := range d.running {
		if r.leaseLost {
			continue
		}
		// A run past its deadline was cancelled (watchDeadlines): its lease
		// is extended once more, so that it has a whole lease to return, and
		// then left to expire, so that a handler that ignores the
		// cancellation does not hold its task forever; the janitor retries
		// or dead-letters it.
		if !r.ended && !r.queued && !now.Before(r.deadline) {
			if r.overdue {
				continue
			}
			r.overdue = true
		}
		leases = append(leases, store.Lease{ID: id, Lease: r.rule.Lease, Attempt: r.task.Attempts})
		runs = append(runs, r)
	}
	d.mu.Unlock()
	if len(leases) == 0 {
		return nil
	}
	started := time.Now() // wall time: the statement's latency, a metric
	held, err := d.cfg.Store.Heartbeat(ctx, d.cfg.Owner, leases, d.cfg.Clock.DBNow())
	if lo, ok := d.cfg.Observer.(execution.LeaseObserver); ok && err == nil {
		lo.Heartbeat(len(leases), time.Since(started))
	}
	if err != nil {
		// A run whose lease has run out by now may be rescued and run
		// elsewhere: stop it rather than run it twice at once.
		d.loseExpired(runs)
		return err
	}
	keep := make(map[uuid.UUID]bool, len(held))
	for _, id := range held {
		keep[id] = true
	}
	var lost []*run
	d.mu.Lock()
	for _, r := range runs {
		switch {
		case keep[r.task.ID]:
			r.leaseUntil = now.Add(r.rule.Lease)
		case r.ended:
			// The run returned while the heartbeat was out (or before):
			// its outcome is queued, and most likely already written, which
			// is why the task is no longer RUNNING. Nothing runs to cancel,
			// and the completer's write settles the outcome either way.
		case !r.leaseLost:
			d.lose(r)
			lost = append(lost, r)
		}
	}
	d.mu.Unlock()
	for _, r := range lost {
		d.log.Warn("lease lost; cancelling the run", execution.TaskAttrs(&r.task)...)
		if lo, ok := d.cfg.Observer.(execution.LeaseObserver); ok {
			lo.LeaseLost(&r.task)
		}
		r.cancel(errLeaseLost)
	}
	return nil
}

// loseExpired cancels, as lease lost, those of runs whose lease has ended by
// this instance's reckoning, when a heartbeat could not extend it.
func (d *Dispatcher) loseExpired(runs []*run) {
	now := d.cfg.Clock.Now()
	var lost []*run
	d.mu.Lock()
	for _, r := range runs {
		if !r.ended && !r.leaseLost && now.After(r.leaseUntil) {
			d.lose(r)
			lost = append(lost, r)
		}
	}
	d.mu.Unlock()
	for _, r := range lost {
		d.log.Warn("lease expired while heartbeats failed; cancelling the run", "task_id", r.task.ID, "task_type", r.task.TaskType)
		r.cancel(errLeaseLost)
	}
}

// Beat runs one heartbeat now (for tests and benchmarks).
func (d *Dispatcher) Beat(ctx context.Context) error { return d.beat(ctx) }
