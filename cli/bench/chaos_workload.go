package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
)

// offer enqueues tasks (half of them under one of a few shared dedup keys)
// and emits events at the configured rate until ctx ends.
func (c *chaos) offer(ctx context.Context) {
	cl := client.New(c.env.store, c.specs)
	em := events.NewEmitter(c.env.store)
	i := -1 // the tick's number, from 0
	clock.Every(ctx, clock.Real{}, time.Duration(float64(time.Second)/c.cfg.Rate), func() bool {
		i++
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req := client.Request{TaskType: chaosWork, Inputs: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))}
		if i%2 == 0 {
			req.DedupKey = fmt.Sprintf("chaos-%d", i/2%chaosDedupMod)
		}
		res, err := cl.Enqueue(wctx, req)
		c.mu.Lock()
		if err != nil {
			c.res.EnqueueFailed++
		} else {
			c.res.Enqueued++
			c.acked = append(c.acked, res.Task.ID)
		}
		c.mu.Unlock()
		if i%4 == 0 {
			c.mu.Lock()
			n := c.nextN
			c.nextN++
			c.mu.Unlock()
			_, err := em.Emit(wctx, events.Event{Type: chaosEvent, Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, n))})
			c.mu.Lock()
			c.emitted[n] = err == nil
			if err != nil {
				c.res.EmitFailed++
			} else {
				c.res.Emitted++
			}
			c.mu.Unlock()
		}
		cancel()
		return true
	})
}

// sampleKeys checks, twice a second, that no dedup key is held by two live
// tasks.
func (c *chaos) sampleKeys(ctx context.Context) {
	clock.Every(ctx, clock.Real{}, 500*time.Millisecond, func() bool {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		keys, err := c.env.store.LiveDuplicateKeys(qctx)
		cancel()
		if err != nil {
			return true // the database is restarting
		}
		c.mu.Lock()
		c.res.DuplicateKeySamples++
		c.mu.Unlock()
		for _, k := range keys {
			c.violate("dedup key %s is held by more than one live task", k)
		}
		return true
	})
}

// drain waits, with every instance running and no more faults, until every
// task is COMPLETED and the outbox is empty, or DrainTimeout.
func (c *chaos) drain(ctx context.Context) error {
	deadline := time.Now().Add(c.cfg.DrainTimeout)
	for {
		tasks, evs, err := c.env.store.Unsettled(ctx)
		if err == nil && tasks == 0 && evs == 0 {
			c.settled = time.Now()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stuck: %d tasks not COMPLETED and %d events left %s after the faults (err %v)", tasks, evs, c.cfg.DrainTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
