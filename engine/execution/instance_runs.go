package execution

import (
	"context"
	"sync"

	"github.com/wfhq/wf/runners"
)

// InstanceRuns counts, per pair, the runs of one instance against the
// pair's concurrency.per_instance: the dispatcher's (the runs of its claimed
// tasks, and the room its claims in flight reserved) and the SYNCHRONOUS
// runs in front of API callers. The composition root (engine.New) makes one
// per instance and gives it to both, so that the cap holds for the two
// together: counted apart, each filled it.
//
// A synchronous run finds room among the runs, not the reservations: when
// only a claim in flight stands in its way, it waits for the claim to end
// (a round trip) and the next claim leaves it the room it waits for,
// rather than be refused for tasks that may not exist. The zero value is
// not usable; make one with NewInstanceRuns.
type InstanceRuns struct {
	mu    sync.Mutex
	pairs map[runners.Pair]*pairRuns
}

// pairRuns is one pair's count, guarded by InstanceRuns.mu.
type pairRuns struct {
	running  int // runs that hold room (Acquire, or Settle's started)
	reserved int // room claims in flight hold (Reserve)
	waiting  int // Acquires waiting for reservations to settle
	// changed is closed, and replaced, when reservations settle or runs
	// end: the waiting Acquires look again.
	changed chan struct{}
	// onRoom is what a Reserve that the cap left short asked to be called
	// when a run ends.
	onRoom func()
}

// NewInstanceRuns returns an empty count.
func NewInstanceRuns() *InstanceRuns {
	return &InstanceRuns{pairs: map[runners.Pair]*pairRuns{}}
}

// pair returns pair's count, made on first use. c.mu must be held.
func (c *InstanceRuns) pair(pair runners.Pair) *pairRuns {
	p := c.pairs[pair]
	if p == nil {
		p = &pairRuns{changed: make(chan struct{})}
		c.pairs[pair] = p
	}
	return p
}

// signal wakes the Acquires waiting on p. c.mu must be held.
func (p *pairRuns) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Reserve takes room for up to want runs of pair for a claim about to be
// made, as much as limit leaves beside the runs, the other claims'
// reservations and the synchronous runs waiting for room, and returns how
// much it took (0 to want). Settle it once the claim's tasks started. When
// the limit leaves it fewer than want and onRoom is not nil, onRoom is
// called once, when a run of pair next ends (Release; the last onRoom
// given wins): the wake-up of a dispatcher held back by runs it does not
// own. onRoom must not block.
func (c *InstanceRuns) Reserve(pair runners.Pair, limit, want int, onRoom func()) int {
	if want <= 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pair(pair)
	got := max(0, min(want, limit-p.running-p.reserved-p.waiting))
	if got < want && onRoom != nil {
		p.onRoom = onRoom
	}
	p.reserved += got
	return got
}

// Settle ends a reservation of reserved runs of pair: started of them are
// now runs (each given back by Release when it ends), the rest is free.
func (c *InstanceRuns) Settle(pair runners.Pair, reserved, started int) {
	if reserved <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pair(pair)
	p.reserved -= reserved
	p.running += started
	p.signal()
}

// Acquire takes room for one run of pair under limit for a run about to
// start outside the dispatcher (a SYNCHRONOUS run) and reports whether it
// did: false when limit runs hold the room. When claims in flight hold
// some of it, it waits for them to settle and looks again. It returns
// ctx's error when ctx ends first. Give the room back with Release.
func (c *InstanceRuns) Acquire(ctx context.Context, pair runners.Pair, limit int) (bool, error) {
	c.mu.Lock()
	p := c.pair(pair)
	for {
		if p.running >= limit {
			c.mu.Unlock()
			return false, nil
		}
		if p.running+p.reserved < limit {
			p.running++
			c.mu.Unlock()
			return true, nil
		}
		// Claims in flight hold the room: the next Reserve leaves this
		// run its place (waiting) until it has looked again.
		p.waiting++
		changed := p.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		}
		c.mu.Lock()
		p.waiting--
		if err := ctx.Err(); err != nil {
			// The room a claim left this run is free again: wake the
			// dispatcher a short Reserve asked to be woken.
			onRoom := p.onRoom
			p.onRoom = nil
			c.mu.Unlock()
			if onRoom != nil {
				onRoom()
			}
			return false, err
		}
	}
}

// Release gives back the room of n runs of pair that ended, and calls the
// onRoom a short Reserve of the pair left, if any.
func (c *InstanceRuns) Release(pair runners.Pair, n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	p := c.pair(pair)
	p.running -= n
	p.signal()
	onRoom := p.onRoom
	p.onRoom = nil
	c.mu.Unlock()
	if onRoom != nil {
		onRoom()
	}
}
