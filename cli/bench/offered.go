package bench

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
)

// offered runs the workers, offers Rate tasks/s for Duration, and measures
// completion, latency and the backlog. In latency mode every task is its own
// enqueue (a commit each), as separate clients would send them; in
// continuous mode the tasks due every 10 ms go in one statement.
func offered(ctx context.Context, e *env, res *Result) error {
	log := e.cfg.Logger
	cfg := e.cfg
	res.OfferedRate = cfg.Rate
	w, err := startWorkers(ctx, e, true)
	if err != nil {
		return err
	}
	defer func() { _ = w.stop() }() // on an error; the run stops them itself to measure them
	m, err := startMeter(ctx, e)
	if err != nil {
		return err
	}
	enqPool, err := e.newPool(ctx, 8)
	if err != nil {
		return err
	}
	defer enqPool.Close()
	cl := e.client(enqPool)
	req := client.Request{TaskType: taskTypeName, Inputs: payload(cfg.PayloadBytes)}
	if _, err := cl.Enqueue(ctx, req); err != nil { // warm the partition check
		return err
	}

	var (
		mu       sync.Mutex
		enqueued = map[uuid.UUID]time.Time{}
		firstErr error
	)
	record := func(at time.Time, results []client.Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		for _, r := range results {
			enqueued[r.Task.ID] = at
		}
	}

	// Sample the backlog once a second while offering.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		clock.Every(sampleCtx, clock.Real{}, time.Second, func() bool {
			b, err := e.store.TaskBacklog(sampleCtx, taskTypeName)
			if err == nil {
				mu.Lock()
				res.Backlog = append(res.Backlog, b.Pending+b.Active)
				mu.Unlock()
			}
			return true
		})
	}()

	log.Info("offering tasks", "rate", cfg.Rate, "duration", cfg.Duration, "mode", cfg.Mode)
	tick := 10 * time.Millisecond
	if cfg.Mode == ModeLatency {
		tick = time.Millisecond
	}
	jobs := make(chan struct{}, 1<<16)
	var wg sync.WaitGroup
	if cfg.Mode == ModeLatency {
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range jobs {
					at := time.Now()
					r, err := cl.Enqueue(ctx, req)
					record(at, []client.Result{r}, err)
				}
			}()
		}
	}
	start := time.Now()
	sent := 0
	ticker := time.NewTicker(tick)
	for now := start; now.Sub(start) < cfg.Duration; now = <-ticker.C {
		due := int(math.Floor(cfg.Rate*now.Sub(start).Seconds())) + 1
		if due <= sent {
			continue
		}
		k := due - sent
		sent = due
		if cfg.Mode == ModeLatency {
			for range k {
				jobs <- struct{}{}
			}
			continue
		}
		reqs := make([]client.Request, k)
		for i := range reqs {
			reqs[i] = req
		}
		at := time.Now()
		out, err := cl.EnqueueMany(ctx, reqs)
		record(at, out, err)
		if err != nil {
			break
		}
	}
	ticker.Stop()
	close(jobs)
	wg.Wait()
	offeredFor := time.Since(start)
	stopSampling()
	<-samplerDone
	if firstErr != nil {
		return firstErr
	}
	res.Inserted = len(enqueued)
	res.InsertRate = float64(len(enqueued)) / offeredFor.Seconds()

	// Drain what is left, then stop.
	if drained, err := drain(ctx, e, 20*time.Millisecond, time.Now().Add(2*time.Minute)); err != nil {
		return err
	} else if !drained {
		return fmt.Errorf("the backlog did not drain within 2 minutes of the end of the offer")
	}
	res.WallSeconds = time.Since(start).Seconds()
	starts, ends, inProc := w.timings()
	enqPool.Close() // the offering is over; its commits are counted
	if err := m.stopWorkers(ctx, w, res, true); err != nil {
		return err
	}

	timings, err := e.store.CompletedTimings(ctx, taskTypeName)
	if err != nil {
		return err
	}
	var startLat, doneLat []time.Duration
	completedInWindow := 0
	for _, t := range timings {
		at, ok := enqueued[t.ID]
		if !ok {
			continue // the warm-up task
		}
		started, finished := t.StartedAt, t.FinishedAt
		if inProc {
			if s, ok := starts[t.ID]; ok {
				started = s
			}
			if f, ok := ends[t.ID]; ok {
				finished = f
			}
		}
		startLat = append(startLat, started.Sub(at))
		doneLat = append(doneLat, finished.Sub(at))
		if finished.Sub(start) <= offeredFor {
			completedInWindow++
		}
	}
	res.Completed = len(startLat)
	res.WorkSeconds = offeredFor.Seconds()
	res.CompleteRate = float64(completedInWindow) / offeredFor.Seconds()
	res.StartLatency, res.CompleteLatency = percentiles(startLat), percentiles(doneLat)
	res.CommitsPerTask = float64(res.Commits) / float64(max(res.Completed, 1))
	judgeBacklog(res, cfg.Rate)
	log.Info("offer done", "completed", res.Completed, "p50_start_ms", res.StartLatency.P50)
	return nil
}

// judgeBacklog decides whether the backlog stayed flat: its least-squares
// rise is under 2% of the offered rate, and it never held more than two
// seconds of work.
func judgeBacklog(res *Result, rate float64) {
	s := res.Backlog
	for _, b := range s {
		res.BacklogMax = max(res.BacklogMax, b)
	}
	if len(s) >= 2 {
		var sx, sy, sxx, sxy float64
		for i, b := range s {
			x, y := float64(i), float64(b)
			sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		}
		n := float64(len(s))
		if d := n*sxx - sx*sx; d != 0 {
			res.BacklogRise = (n*sxy - sx*sy) / d
		}
	}
	flat := res.BacklogRise < 0.02*rate && float64(res.BacklogMax) <= 2*rate
	res.BacklogFlat = &flat
}
