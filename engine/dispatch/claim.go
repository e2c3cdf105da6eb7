package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/runners"
)

// claimUntilIdle claims batch after batch while the batches come back full.
//
// The first claim of a wake-up asks for every free slot at once, so a new
// task starts as soon as its notification arrives. While a backlog waits
// (the last claim filled its slots), two things keep the claims few and
// large:
//   - freed slots are let gather, for up to ClaimCoalesce, into a batch of
//     at least minBatch, rather than claimed one by one as each run ends
//     (each claim is a statement and a commit);
//   - up to ClaimWorkers claims run at once, each for a share of at least
//     parallelClaimMin of the free slots: a claim's cost grows with its rows,
//     so two of them keep the database working on both cores while the
//     tasks of the last batch start.
func (d *Dispatcher) claimUntilIdle(ctx, runsCtx context.Context) {
	for round := 0; ctx.Err() == nil; round++ {
		backlog := round > 0 || d.inBacklog()
		if backlog && !d.gatherSlots(ctx) {
			return
		}
		free := d.freeCount()
		k := 1
		if backlog {
			k = max(1, min(d.cfg.ClaimWorkers, free/parallelClaimMin))
		}
		full, err := d.claimParallel(ctx, runsCtx, k, free)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("claim failed; retrying at the next wake-up", "err", err)
			}
			return
		}
		if !full {
			return
		}
	}
}

// claimParallel runs k claims at once for free slots in all and reports
// whether every one came back full.
func (d *Dispatcher) claimParallel(ctx, runsCtx context.Context, k, free int) (bool, error) {
	if k <= 1 {
		return d.claimOnce(ctx, runsCtx, max(free, 1))
	}
	share := (free + k - 1) / k
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		allFull  = true
		firstErr error
	)
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			full, err := d.claimOnce(ctx, runsCtx, share)
			mu.Lock()
			defer mu.Unlock()
			allFull = allFull && full
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return allFull && firstErr == nil, firstErr
}

// gatherSlots waits, up to ClaimCoalesce, until at least minBatch slots are
// free, and reports whether any is.
func (d *Dispatcher) gatherSlots(ctx context.Context) bool {
	want := d.minBatch()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// Wall time: ClaimCoalesce trades latency for larger claims; it is no
	// time the engine reckons with.
	deadline := time.Now().Add(d.cfg.ClaimCoalesce)
	for {
		free := d.freeCount()
		if free >= want {
			return true
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return free > 0
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-ctx.Done():
			return false
		case <-d.waker.C(): // a run ended (or a task was queued)
		case <-timer.C:
		}
	}
}

// claimTimeout bounds a claim, which shutdown does not cancel (claimOnce).
const claimTimeout = 30 * time.Second

// parallelClaimMin is the smallest share of the free slots worth a claim of
// its own: below it, the fixed cost of a statement (about half a millisecond
// of planning, start-up and commit) outweighs running two at once.
const parallelClaimMin = 100

// minBatch is the smallest claim worth a statement while a backlog waits: a
// quarter of the slots, at most 100.
func (d *Dispatcher) minBatch() int { return max(1, min(d.cfg.Slots/4, 100)) }

func (d *Dispatcher) inBacklog() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.backlog
}

// freeCount is how many tasks a claim may take now: the slots no run and no
// claim in flight holds, plus those that may be claimed ahead (ahead.go).
func (d *Dispatcher) freeCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return max(d.cfg.Slots+d.ahead()-d.busy()-d.reserved, 0)
}

// unreserve gives back the slots freeSlots reserved for a claim, once its
// tasks are running (and so counted in running), and settles the
// per-instance room it reserved: its started tasks keep theirs until their
// runs end (freeSlot, forget), the rest is free again.
func (d *Dispatcher) unreserve(sv *serving, slots []store.ClaimSlot, total int, started map[runners.Pair]int) {
	if total == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reserved -= total
	for _, sl := range slots {
		pair := runners.Pair{Mode: sl.Mode, TaskType: sl.TaskType}
		if sv.rules[pair].PerInstance > 0 {
			d.instance.Settle(pair, sl.Max, started[pair])
		}
	}
}

// claimOnce claims up to limit of the free slots in one round trip and
// starts the tasks. It reports whether the claim filled every slot it asked
// for. Claims may run at once (see claimUntilIdle): the slots a claim asks
// for are reserved until its tasks run.
func (d *Dispatcher) claimOnce(ctx, runsCtx context.Context, limit int) (bool, error) {
	sv := d.serving.Load() // what this claim is for, whatever a reload swaps in
	slots, total := d.freeSlots(sv, limit)
	var started map[runners.Pair]int // tasks of the claim that started, per pair
	defer func() { d.unreserve(sv, slots, total, started) }()
	if total == 0 {
		d.mu.Lock()
		d.backlog = true
		d.mu.Unlock()
		return false, nil
	}
	start, wallStart := d.cfg.Clock.Now(), time.Now()
	// The claim outlives ctx (shutdown): abandoned on its way, it may
	// still commit, and its tasks would stay ACTIVE, owned by an instance
	// that stopped, until their leases expired and cost them an attempt.
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	fair := d.census.fairness(d.cfg.Fair, slots, start)
	var fc *fairClaim
	if fair != nil {
		fc = d.census.begin(slots, start)
	}
	claimed, err := d.cfg.Store.Claim(claimCtx, store.ClaimParams{
		Owner: d.cfg.Owner, Slots: slots, Total: total, Global: d.globalLimits(sv, slots), Now: d.cfg.Clock.DBNow(),
		Fair: fair, Limits: d.typeLimits(sv, slots),
	})
	cancel()
	if fair != nil {
		// A failed claim found nothing: the next one is fair (the signal
		// this one spent may be a new tenant's).
		d.census.end(fc, claimed) // the zero Claimed when it failed
	}
	if err != nil {
		return false, err
	}
	if ctx.Err() != nil && len(claimed.Tasks) > 0 {
		// Shutdown began while the claim was out: its tasks never start,
		// they go back at once, with no attempt counted.
		ids := make([]uuid.UUID, len(claimed.Tasks))
		for i := range claimed.Tasks {
			ids[i] = claimed.Tasks[i].ID
		}
		d.handBack(ids)
		return false, nil
	}
	d.mu.Lock()
	d.pace.claimed(time.Since(wallStart))
	d.mu.Unlock()
	tasks := claimed.Tasks
	if d.cfg.Observer != nil && len(tasks) > 0 {
		d.cfg.Observer.Claimed(tasks, d.cfg.Clock.Now().Sub(start))
	}
	// A pair that got all it asked for may have more waiting: finishing
	// runs then wake the dispatcher instead of waiting for a signal.
	// So may a type whose global cap the claim filled: the room its runs
	// free is for more of it.
	got := map[runners.Pair]int{}
	gotType := map[string]int{}
	for _, t := range tasks {
		got[runners.Pair{Mode: t.ExecutionMode, TaskType: t.TaskType}]++
		gotType[t.TaskType]++
	}
	full := len(tasks) > 0 && len(tasks) == total
	backlog := full
	for _, s := range slots {
		if s.Max > 0 && got[runners.Pair{Mode: s.Mode, TaskType: s.TaskType}] >= s.Max {
			backlog = true
		}
	}
	for tt, room := range claimed.Room {
		if gotType[tt] >= room {
			backlog = true
		}
	}
	// Tasks held back by a per-tenant cap may start when a run of their
	// type ends: let finishing runs wake the dispatcher.
	for _, s := range slots {
		if sv.rules[runners.Pair{Mode: s.Mode, TaskType: s.TaskType}].PerTenant > 0 {
			backlog = true
		}
	}
	d.mu.Lock()
	d.backlog = backlog
	d.mu.Unlock()
	for i := range tasks {
		d.start(runsCtx, sv, tasks[i], start)
	}
	started = got
	return full, nil
}

// freeSlots computes, per pair, how many more tasks this instance may run,
// at most limit in all, and reserves them for the caller's claim (give them
// back with unreserve once the claimed tasks run). A pair with a
// per-instance cap gets the room Config.InstanceRuns leaves, which the runs
// of this dispatcher and the instance's SYNCHRONOUS runs share; when the cap
// leaves it short, the dispatcher is woken once a run of the pair ends.
func (d *Dispatcher) freeSlots(sv *serving, limit int) ([]store.ClaimSlot, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	free := d.cfg.Slots - d.busy() - d.reserved // slots free now
	total := min(free+d.ahead(), limit)
	if total <= 0 {
		return nil, 0
	}
	slots := make([]store.ClaimSlot, 0, len(sv.rules))
	for pair, r := range sv.rules {
		max := total
		if limited(r) {
			max = min(max, free) // never claimed ahead (ahead.go)
		}
		if r.PerInstance > 0 {
			max = d.instance.Reserve(pair, r.PerInstance, max, d.wake)
		}
		if max <= 0 {
			continue
		}
		slots = append(slots, store.ClaimSlot{Mode: pair.Mode, TaskType: pair.TaskType, Max: max, Lease: r.Lease})
	}
	if len(slots) == 0 {
		return nil, 0
	}
	d.reserved += total
	return slots, total
}

// globalLimits returns the cluster-wide caps (concurrency.global) of the
// types among slots, or nil when none has one. The store counts and claims
// a capped type under the type's advisory lock, in one transaction, so that
// claims of several instances at the same instant take turns and never
// overshoot the cap (store.ClaimParams.Global).
func (d *Dispatcher) globalLimits(sv *serving, slots []store.ClaimSlot) map[string]int {
	var caps map[string]int
	for _, s := range slots {
		if r := sv.rules[runners.Pair{Mode: s.Mode, TaskType: s.TaskType}]; r.Global > 0 {
			if caps == nil {
				caps = map[string]int{}
			}
			caps[s.TaskType] = max(caps[s.TaskType], r.Global)
		}
	}
	return caps
}

// typeLimits returns the per-tenant and rate limits of the types among
// slots, or nil when none has one (global caps go in globalLimits).
func (d *Dispatcher) typeLimits(sv *serving, slots []store.ClaimSlot) map[string]store.TypeLimits {
	var lims map[string]store.TypeLimits
	for _, s := range slots {
		r := sv.rules[runners.Pair{Mode: s.Mode, TaskType: s.TaskType}]
		if r.PerTenant == 0 && r.RateInterval == 0 {
			continue
		}
		if lims == nil {
			lims = map[string]store.TypeLimits{}
		}
		lims[s.TaskType] = r.Limits()
	}
	return lims
}
