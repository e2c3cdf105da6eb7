package dispatch

import (
	"context"
	"sync"
	"time"

	"wf/engine/store"
	"wf/engine/wftype"
)

// maxErrorLen bounds the error text stored on a task.
const maxErrorLen = 8 << 10

// complete writes outcomes in batches: every FlushSize results or
// FlushInterval after the first one waiting, whichever comes first. Up to
// FlushWorkers batches are written at once, each on its own connection, so
// the next batch is sent while the database still writes the last one. The
// bounded channel makes finishing runs wait when writes fall behind
// (back-pressure). A failed write is retried until it succeeds or the
// dispatcher stops; a result never written is not lost, only re-run after
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
		o := Outcome(&r.task, r.rule, r.outputs, r.err, now)
		outcomes[i], statuses[i] = o, o.Status
	}
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := d.cfg.Store.FinishTasks(ctx, store.FinishParams{Owner: d.cfg.Owner, Now: d.cfg.Clock.DBNow()}, outcomes)
		cancel()
		if err == nil {
			break
		}
		if attempt >= 9 {
			d.log.Error("giving up writing results; the tasks will run again when their leases expire", "tasks", len(batch), "err", err)
			return
		}
		d.log.Warn("writing results failed; retrying", "tasks", len(batch), "err", err)
		time.Sleep(time.Duration(attempt+1) * 500 * time.Millisecond)
	}
	if d.cfg.Observer != nil {
		for i := range batch {
			d.cfg.Observer.Finished(&batch[i].task, statuses[i], batch[i].ran)
		}
	}
}
