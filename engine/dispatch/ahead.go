package dispatch

import (
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/runners"
)

// Claiming ahead (Config.ClaimAhead).
//
// With short tasks, a dispatcher that claims only for free slots leaves each
// slot idle for a whole claim round trip: a claim takes the slots it asks
// for, their tasks end in microseconds, and the slots wait for the next
// claim to come back (a statement and a commit). With 100 slots and a round
// trip of 4 ms that is 25,000 tasks/s at most, however fast the database, and
// most of what kept wf run's default below a queue running 2,000 workers.
//
// So the dispatcher may claim more tasks than it has free slots: the extra
// ones wait in a queue, in claim order, and each slot that frees starts the
// next one at once. How many may wait is what the slots finish during one
// claim's round trip: Slots × the claim's time ÷ a run's time (moving
// averages of both, wall time), at most ClaimAhead (8 × Slots by default).
// Short tasks are claimed ahead by up to ClaimAhead, tasks that run longer
// than a claim hardly at all, so a task waits in the queue about as long as
// it would have waited for the next claim, and an instance never sits on
// work that another could start sooner. The cap binds only for tasks far
// shorter than a claim, whose queue drains at once: there it sets the
// claims' size, and larger claims cost the database less per task (at 100
// slots, a cap of 4 × Slots ran 1.6× the burn-down rate of a cap of Slots,
// with 40% fewer commits per task; 8 × Slots, the default, 1.1–1.3× that of
// 4 × Slots, with 0.006 commits per task instead of 0.010 and 15–20% less
// PostgreSQL CPU per task).
//
// A waiting task is ACTIVE and owned by this instance like a running one:
// the heartbeat extends its lease, a cancellation or a lost lease drops it,
// and shutdown hands it back at once (it never started). Its run timeout
// starts when it starts. Pairs with a limit that counts running tasks
// (concurrency per instance, per tenant or global, rate limits) are never
// claimed ahead: only free slots are claimed for them, as before.

// paceWeight is the weight of a new sample in the moving averages.
const paceWeight = 0.2

// pace holds moving averages of how long runs and claims take, guarded by
// the dispatcher's mutex.
type pace struct {
	run, claim time.Duration
}

// ran records a run's duration (from its start to its slot's release).
func (p *pace) ran(d time.Duration) { p.run = ewma(p.run, d) }

// claimed records a claim's round trip.
func (p *pace) claimed(d time.Duration) { p.claim = ewma(p.claim, d) }

func ewma(avg, sample time.Duration) time.Duration {
	if avg == 0 {
		return max(sample, 1)
	}
	return time.Duration(float64(avg)*(1-paceWeight) + float64(sample)*paceWeight)
}

// ahead is how many claimed tasks may wait for a slot now (see above): none
// until a run and a claim were timed. d.mu must be held.
func (d *Dispatcher) ahead() int {
	if d.cfg.ClaimAhead <= 0 || d.pace.run == 0 || d.pace.claim == 0 || d.draining {
		return 0
	}
	n := float64(d.cfg.Slots) * float64(d.pace.claim) / float64(d.pace.run)
	return int(min(n, float64(d.cfg.ClaimAhead)))
}

// nextQueued takes the oldest queued run off the queue when a slot is free,
// dropping those whose lease was lost (or task cancelled) while they waited,
// and arms it (arm: earlier as arm reports). d.mu must be held; the caller
// launches the run it returns.
func (d *Dispatcher) nextQueued() (next *run, earlier bool) {
	for len(d.queue) > 0 && !d.draining && d.busy()-len(d.queue) < d.cfg.Slots {
		r := d.queue[0]
		d.queue = d.queue[1:]
		r.queued = false
		if !r.leaseLost {
			return r, d.arm(r)
		}
		d.forget(r)
	}
	return nil, false
}

// unqueue takes a run off the queue and forgets it. d.mu must be held.
func (d *Dispatcher) unqueue(r *run) {
	if i := slices.Index(d.queue, r); i >= 0 {
		d.queue = slices.Delete(d.queue, i, i+1)
	}
	r.queued = false
	d.forget(r)
}

// forget drops a run that never started from the running set. d.mu must
// be held.
func (d *Dispatcher) forget(r *run) {
	if d.running[r.task.ID] == r {
		delete(d.running, r.task.ID)
	}
	d.releaseInstance(r)
	r.cancel(errLeaseLost)
	d.settleIdle()
}

// drainQueue stops queued runs from starting and returns the tasks of
// those still waiting, forgotten, for shutdown to hand back at once.
func (d *Dispatcher) drainQueue() []uuid.UUID {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draining = true
	var ids []uuid.UUID
	for _, r := range d.queue {
		r.queued = false
		if !r.leaseLost {
			ids = append(ids, r.task.ID)
		}
		d.forget(r)
	}
	d.queue = nil
	d.settleIdle()
	return ids
}

// pairOf is the (execution mode, task type) pair of a run's task.
func pairOf(r *run) runners.Pair {
	return runners.Pair{Mode: r.task.ExecutionMode, TaskType: r.task.TaskType}
}

// limited reports whether a pair's rule limits its running tasks or its
// starts: such a pair is claimed for free slots only, never ahead.
func limited(r execution.Rule) bool {
	return r.PerInstance > 0 || r.Global > 0 || r.PerTenant > 0 || r.RateInterval > 0
}
