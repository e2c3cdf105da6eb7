package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// noisyTenants are the tenants that enqueue a few tasks each after the
// flood (tenant A is the system tenant, through the bulk enqueue).
var noisyTenants = []string{"bench_b", "bench_c", "bench_d", "bench_e"}

// noisyEach is how many tasks each of noisyTenants enqueues.
const noisyEach = 100

// The suite's noisy-neighbour runs (wf's default 100 slots, a flood of
// 100,000), fairness on and off, noisyRounds times each (noisyOrder): one
// pair moves by ±25% from run to run on the 2-core machine (the same build,
// minutes apart), more than the effect measured, so the targets take the
// worst p99 and the median ratio of the pairs. Five pairs rather than three:
// at 2026-12-02's fairness cost (~5%), three pairs' median fell on either
// side of the 0.9× goal from one make bench to the next.
const (
	noisyFair   = "noisy neighbour, fairness on"
	noisyUnfair = "noisy neighbour, fairness off"
	noisyRounds = 5
)

// noisyOrder is the order of round k's two runs (fairness on first, or
// off): it alternates, so that neither side of the ratio always runs
// second (after the other's server was stopped and its files removed).
func noisyOrder(k int) []bool {
	if k%2 == 0 {
		return []bool{false, true}
	}
	return []bool{true, false}
}

// noisyRunName names round k (from 1) of the suite's noisy-neighbour runs
// with fairness on or off.
func noisyRunName(fair bool, k int) string {
	name := noisyUnfair
	if fair {
		name = noisyFair
	}
	return fmt.Sprintf("%s, round %d", name, k)
}

// addNoisyTargets adds issue 21's noisy-neighbour targets to the suite's
// (targets' add): with fairness on, the other tenants' enqueue→start p99
// under the flood at most 1 s (the worst of the rounds), and the flooding
// tenant's throughput within 10% of its throughput with fairness off (the
// median of the rounds' ratios).
func addNoisyTargets(s *Suite, add func(name, goal string, r *Result, value func(*Result) (float64, bool), format string, met func(float64) bool)) {
	var worstP99 float64
	var ratios []float64
	var first *Result
	for k := 1; k <= noisyRounds; k++ {
		fair, unfair := s.run(noisyRunName(true, k)), s.run(noisyRunName(false, k))
		if fair == nil {
			continue
		}
		first = cmp.Or(first, fair)
		if fair.StartLatency != nil && fair.StartLatency.Count > 0 {
			worstP99 = max(worstP99, fair.StartLatency.P99)
		}
		if unfair != nil && unfair.FloodRate > 0 && fair.FloodRate > 0 {
			ratios = append(ratios, fair.FloodRate/unfair.FloodRate)
		}
	}
	add("noisy neighbour: B..E enqueue→start p99 under A's flood, fairness on (worst round)", "≤ 1 s", first,
		func(*Result) (float64, bool) { return worstP99, worstP99 > 0 }, "%.0f ms", func(v float64) bool { return v <= 1000 })
	add("noisy neighbour: A's throughput, fairness on / off (median of the rounds' pairs)", "≥ 0.9×", first,
		func(*Result) (float64, bool) {
			if len(ratios) == 0 {
				return 0, false
			}
			slices.Sort(ratios)
			return ratios[len(ratios)/2], true
		}, "%.2f×", func(v float64) bool { return v >= 0.9 })
}

// noisy is the noisy-neighbour run: with the workers running, tenant A
// enqueues Tasks in bulk, then B..E noisyEach each; it reports B..E's
// enqueue→start (from the rows: created → started_at) and A's throughput
// (its tasks over the time from its first start to its last completion).
func noisy(ctx context.Context, e *env, res *Result) error {
	log := e.cfg.Logger
	fair := !e.cfg.Unfair
	res.Fair = &fair
	for _, tn := range noisyTenants {
		if _, err := e.store.CreateCatalog(ctx, store.NewCatalog{ID: tn, SchemaName: tn}); err != nil {
			return err
		}
	}
	w, err := startWorkers(ctx, e, false)
	if err != nil {
		return err
	}
	defer func() { _ = w.stop() }() // on an error; stopped below when all is done
	start := time.Now()
	inserted, took, err := bulkEnqueue(ctx, e, e.cfg.Tasks)
	if err != nil {
		return err
	}
	res.Inserted, res.InsertRate = inserted, float64(inserted)/took.Seconds()
	for _, tn := range noisyTenants {
		batch := make([]store.NewTask, noisyEach)
		for i := range batch {
			batch[i] = store.NewTask{SchemaName: tn, Scope: wftype.ScopeCatalog, ExecutionMode: wftype.ModeAsync,
				TaskType: taskTypeName, Inputs: payload(e.cfg.PayloadBytes)}
		}
		if _, err := e.store.InsertTasks(ctx, batch); err != nil {
			return err
		}
	}
	total := inserted + len(noisyTenants)*noisyEach
	log.Info("flood and neighbours enqueued; burning down", "fair", fair, "tasks", total)
	timeout := time.Now().Add(max(2*time.Minute, time.Duration(total)*time.Millisecond))
	if drained, err := drain(ctx, e, 50*time.Millisecond, timeout); err != nil {
		return err
	} else if !drained {
		return fmt.Errorf("noisy-neighbour run did not finish within %s", time.Since(start))
	}
	res.WallSeconds = time.Since(start).Seconds()
	if err := w.stop(); err != nil {
		return err
	}
	timings, err := e.store.CompletedTimings(ctx, taskTypeName)
	if err != nil {
		return err
	}
	var others []time.Duration
	var first, last time.Time
	flood := 0
	for _, t := range timings {
		if slices.Contains(noisyTenants, t.SchemaName) {
			others = append(others, t.StartedAt.Sub(t.Created))
			continue
		}
		flood++
		if first.IsZero() || t.StartedAt.Before(first) {
			first = t.StartedAt
		}
		if t.FinishedAt.After(last) {
			last = t.FinishedAt
		}
	}
	res.Completed = len(timings)
	res.StartLatency = percentiles(others)
	// Every tenant's tasks, as burn-down reports them.
	win, err := e.store.TaskCompletionWindow(ctx, taskTypeName)
	if err != nil {
		return err
	}
	if res.WorkSeconds = win.LastFinished.Sub(win.FirstStarted).Seconds(); res.WorkSeconds > 0 {
		res.CompleteRate = float64(win.Completed) / res.WorkSeconds
	}
	if d := last.Sub(first).Seconds(); d > 0 {
		res.FloodRate = float64(flood) / d
	}
	log.Info("noisy neighbour", "fair", fair, "others_p50_ms", res.StartLatency.P50, "others_p99_ms", res.StartLatency.P99,
		"flood_per_second", int(res.FloodRate))
	return nil
}
