package dispatch

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// abandonAfter bounds how long shutdown waits, past the grace period, for
// cancelled runs to return (at most Grace): a handler that ignores its
// context must not keep the instance from stopping.
const abandonAfter = 5 * time.Second

// shutdown waits up to Grace for running tasks, then cancels and hands back
// the rest, and waits a little more (abandonAfter) for them to return.
func (d *Dispatcher) shutdown(cancelRuns context.CancelCauseFunc) {
	// Tasks claimed ahead never started: they go back at once.
	if ids := d.drainQueue(); len(ids) > 0 {
		d.handBack(ids)
	}
	d.mu.Lock()
	idle := d.idle
	n := d.busy()
	d.mu.Unlock()
	if n > 0 {
		d.log.Info("shutting down: waiting for running tasks", "running", n, "grace", d.cfg.Grace)
	}
	select {
	case <-idle:
	case <-d.cfg.Clock.After(d.cfg.Grace):
	}
	d.mu.Lock()
	var ids []uuid.UUID
	for id, r := range d.running {
		if r.ended {
			continue // its outcome is queued: the completer writes it
		}
		r.shutdown = true
		ids = append(ids, id)
	}
	d.mu.Unlock()
	if len(ids) > 0 {
		cancelRuns(errShutdown)
		d.handBack(ids)
	}
	cancelRuns(errShutdown)
	runsDone := make(chan struct{})
	go func() { defer close(runsDone); d.wg.Wait() }()
	select {
	case <-runsDone:
	case <-d.cfg.Clock.After(min(d.cfg.Grace, abandonAfter)):
		// Their tasks were handed back (or their leases lost) and their
		// results are dropped: only the outcomes being queued must be
		// waited for, so that the completer writes them.
		d.mu.Lock()
		n := d.busy()
		d.mu.Unlock()
		d.log.Error("stopping while runs ignore their cancellation; their results will be dropped", "running", n)
		d.queuing.Wait()
	}
}

// handBack returns tasks this instance holds to PENDING at once.
func (d *Dispatcher) handBack(ids []uuid.UUID) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	released, err := d.cfg.Store.ReleaseTasks(ctx, d.cfg.Owner, ids)
	cancel()
	if err != nil {
		d.log.Error("could not hand tasks back; their leases will expire", "tasks", len(ids), "err", err)
	} else {
		d.log.Info("handed unfinished tasks back", "tasks", len(released))
	}
}
