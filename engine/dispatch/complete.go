package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// complete writes outcomes in batches: every FlushSize results or
// FlushInterval after the first one waiting, whichever comes first. Up to
// FlushWorkers batches are written at once, each on its own connection, so
// the next batch is sent while the database still writes the last one. The
// bounded channel makes finishing runs wait when writes fall behind
// (back-pressure). A failed write is retried while the tasks' leases may
// hold (see flush); a result never written is not lost, only re-run after
// its lease expires.
func (d *Dispatcher) complete() {
	batches := make(chan []result)
	var writers sync.WaitGroup
	for range d.cfg.FlushWorkers {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for b := range batches {
				d.flush(b)
			}
		}()
	}
	defer func() {
		close(batches)
		writers.Wait()
	}()
	batch := make([]result, 0, d.cfg.FlushSize)
	// Wall time: FlushInterval batches writes for throughput; it is no time
	// the engine reckons with, and a test's clock that never moves would
	// hold every outcome.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		batches <- batch
		batch = make([]result, 0, d.cfg.FlushSize)
	}
	for {
		select {
		case r, ok := <-d.done:
			if !ok {
				flush()
				return
			}
			if len(batch) == 0 {
				timer.Reset(d.cfg.FlushInterval)
			}
			batch = append(batch, r)
			if len(batch) >= d.cfg.FlushSize {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

func (d *Dispatcher) flush(batch []result) {
	now := d.cfg.Clock.Now()
	outcomes := make([]store.Finish, len(batch))
	statuses := make([]wftype.TaskStatus, len(batch))
	for i, r := range batch {
		o := execution.Outcome(&r.task, r.rule, r.outputs, r.err, now)
		outcomes[i], statuses[i] = o, o.Status
	}
	// A result is worth writing while its task's lease may hold: its run
	// left the heartbeat when it ended, so once the lease runs out the
	// janitor hands the task on (and the write would change nothing). While
	// the dispatcher stops, it gives up sooner, so that a database that went
	// away cannot hold the shutdown for a whole lease.
	first := d.cfg.Clock.Now()
	giveUpAt := first.Add(writableFor(batch, d.cfg.HeartbeatInterval))
	pause := flushFirstPause
	var written []uuid.UUID
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var err error
		written, err = d.cfg.Store.FinishTasks(ctx, store.FinishParams{Owner: d.cfg.Owner, Now: d.cfg.Clock.DBNow()}, outcomes)
		cancel()
		if err == nil {
			if attempt > 1 {
				d.log.Info("results written after failures", "tasks", len(batch), "attempts", attempt)
			}
			break
		}
		limit := giveUpAt
		if d.stopping.Load() {
			limit = minTime(limit, first.Add(flushStopLimit))
		}
		if d.cfg.Clock.Now().Add(pause).After(limit) {
			d.log.Error("giving up writing results; the tasks will run again when their leases expire",
				"tasks", len(batch), "attempts", attempt, "err", err)
			return
		}
		if attempt == 1 || attempt%10 == 0 {
			d.log.Warn("writing results failed; retrying", "tasks", len(batch), "attempts", attempt, "err", err)
		}
		_ = clock.Sleep(context.Background(), d.cfg.Clock, pause)
		pause = min(2*pause, flushMaxPause)
	}
	// One line per outcome written (a task whose lease was taken away
	// meanwhile keeps its new owner's result, and its line).
	done := make(map[uuid.UUID]bool, len(written))
	for _, id := range written {
		done[id] = true
	}
	for i := range batch {
		if done[batch[i].task.ID] {
			execution.LogOutcome(context.Background(), d.log, &batch[i].task, outcomes[i])
		}
		if sc := batch[i].span; sc.IsValid() {
			// The outcome's write, in the run's trace.
			_, span := d.tracer.Start(trace.ContextWithSpanContext(context.Background(), sc), "wf.finish "+batch[i].task.TaskType,
				trace.WithTimestamp(batch[i].queued), trace.WithAttributes(
					attribute.String("wf.task_id", batch[i].task.ID.String()), attribute.String("wf.status", string(statuses[i])),
					attribute.Bool("wf.written", done[batch[i].task.ID]), attribute.Int("wf.batch", len(batch))))
			span.End()
		}
	}
	if d.cfg.Observer != nil {
		for i := range batch {
			d.cfg.Observer.Finished(&batch[i].task, statuses[i], batch[i].ran)
		}
	}
}

// Retries of a failed completion write.
const (
	flushFirstPause = 250 * time.Millisecond
	flushMaxPause   = 5 * time.Second
	flushStopLimit  = 30 * time.Second // while the dispatcher stops
)

// writableFor is how long after now the outcomes of batch may still be
// written: the shortest lease among them, less a heartbeat interval (the
// lease was last extended up to one interval before the run ended), and at
// least flushStopLimit.
func writableFor(batch []result, heartbeat time.Duration) time.Duration {
	lease := execution.DefaultLease
	for i := range batch {
		if l := batch[i].rule.Lease; l > 0 && l < lease {
			lease = l
		}
	}
	return max(lease-heartbeat, flushStopLimit)
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
