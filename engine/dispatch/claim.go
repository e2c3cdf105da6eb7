package dispatch

import (
	"context"
	"sync"
	"time"

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

// freeCount is how many slots no run and no claim in flight holds.
func (d *Dispatcher) freeCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return max(d.cfg.Slots-d.busy()-d.reserved, 0)
}

// unreserve gives back the slots freeSlots reserved for a claim, once its
// tasks are running (and so counted in running).
func (d *Dispatcher) unreserve(slots []store.ClaimSlot, total int) {
	if total == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reserved -= total
	for _, sl := range slots {
		pair := runners.Pair{Mode: sl.Mode, TaskType: sl.TaskType}
		if d.rules[pair].PerInstance > 0 {
			d.reservedPer[pair] -= sl.Max
		}
	}
}
