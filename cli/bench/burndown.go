package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/wfhq/wf/engine/client"
)

// meter measures the CPU of a phase: the bench, its children, the local
// server and the whole machine.
type meter struct {
	e              *env
	self, children usage
	pg             time.Duration
	busy, total    int64
	commits        int64
	profile        *os.File
	stoppedProfile bool
}

func startMeter(ctx context.Context, e *env) (*meter, error) {
	m := &meter{e: e}
	var err error
	if m.commits, err = e.store.DatabaseCommits(ctx); err != nil {
		return nil, err
	}
	if e.cfg.Statements {
		if err := e.store.EnableStatementStats(ctx); err != nil {
			return nil, err
		}
	}
	if e.cfg.CPUProfile != "" {
		f, err := os.Create(e.cfg.CPUProfile)
		if err != nil {
			return nil, fmt.Errorf("error creating the CPU profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("error starting the CPU profile: %w", err)
		}
		m.profile = f
	}
	m.self, m.children = selfUsage(), childrenUsage()
	m.pg = processTreeCPU(e.postmasterPID())
	m.busy, m.total = machineCPU()
	return m, nil
}

// cpu returns what the phase used so far; call it once the workers stopped.
func (m *meter) cpu() CPU {
	if m.profile != nil && !m.stoppedProfile {
		pprof.StopCPUProfile()
		m.profile.Close()
		m.stoppedProfile = true
	}
	self, children := selfUsage(), childrenUsage()
	rssKB, _ := processRSS(os.Getpid())
	busy, total := machineCPU()
	c := CPU{
		BenchUserSeconds:     (self.User - m.self.User).Seconds(),
		BenchSysSeconds:      (self.Sys - m.self.Sys).Seconds(),
		BenchRSSMB:           float64(rssKB) / 1024,
		InstancesUserSeconds: (children.User - m.children.User).Seconds(),
		InstancesSysSeconds:  (children.Sys - m.children.Sys).Seconds(),
		PostgresSeconds:      (processTreeCPU(m.e.postmasterPID()) - m.pg).Seconds(),
	}
	if m.e.cfg.Instances > 0 {
		c.InstancesPeakRSSMB = float64(children.MaxRSSKB) / 1024
	}
	if total > m.total {
		c.MachineBusy = float64(busy-m.busy) / float64(total-m.total)
	}
	return c
}

// commitsSince returns the commits since the meter started. The backends
// being measured must have disconnected (they publish their counts then).
func (m *meter) commitsSince(ctx context.Context) (int64, error) {
	// A backend's last counts reach the shared statistics as it exits,
	// just after its client closed the connection.
	time.Sleep(300 * time.Millisecond)
	n, err := m.e.store.DatabaseCommits(ctx)
	return n - m.commits, err
}

// statements reads the top statements when asked for.
func (m *meter) statements(ctx context.Context, res *Result) error {
	if !m.e.cfg.Statements {
		return nil
	}
	top, err := m.e.store.TopStatements(ctx, 12)
	if err != nil {
		return err
	}
	for _, s := range top {
		if strings.Contains(s.Query, "pg_stat_statements") {
			continue
		}
		res.Statements = append(res.Statements, Statement{
			Query: s.Query, Calls: s.Calls, TotalMs: s.TotalMs, MeanMs: s.MeanMs, Rows: s.Rows,
			WALMB: float64(s.WALBytes) / (1 << 20), Plans: s.Plans, PlanMs: s.PlanMs,
		})
	}
	return nil
}

// payload returns the inputs of every bench task: {} or an object padded
// to PayloadBytes.
func payload(n int) json.RawMessage {
	const overhead = len(`{"pad":""}`)
	if n <= overhead {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(`{"pad":"` + strings.Repeat("x", n-overhead) + `"}`)
}

// burnDown enqueues the tasks in bulk, then starts the workers and times
// until every task COMPLETED.
func burnDown(ctx context.Context, e *env, res *Result) error {
	log := e.cfg.Logger
	n := e.cfg.Tasks
	log.Info("enqueueing", "tasks", n, "batch", e.cfg.InsertBatch, "connections", e.cfg.InsertConns)
	pg, self := processTreeCPU(e.postmasterPID()), selfUsage()
	inserted, took, err := bulkEnqueue(ctx, e, n)
	if err != nil {
		return err
	}
	res.Inserted, res.InsertRate = inserted, float64(inserted)/took.Seconds()
	log.Info("enqueued", "tasks", inserted, "seconds", took.Seconds(), "per_second", int(res.InsertRate))
	if e.cfg.enqueueOnly { // the CPU of the enqueue, not of a burn-down
		after := selfUsage()
		res.CPU.PostgresSeconds = (processTreeCPU(e.postmasterPID()) - pg).Seconds()
		res.CPU.BenchUserSeconds, res.CPU.BenchSysSeconds = (after.User - self.User).Seconds(), (after.Sys - self.Sys).Seconds()
		return nil
	}

	m, err := startMeter(ctx, e)
	if err != nil {
		return err
	}
	start := time.Now()
	w, err := startWorkers(ctx, e, false)
	if err != nil {
		return err
	}
	defer func() { _ = w.stop() }() // on an error; stopWorkers stops them to measure them
	log.Info("workers started; burning down", "instances", e.cfg.Instances, "slots", e.cfg.Slots)
	timeout := time.Now().Add(max(2*time.Minute, time.Duration(n)*time.Millisecond))
	drained := true
	if w.finished() >= 0 { // in process: the workers count the tasks they finished
		for drained && w.finished() < int64(inserted) {
			time.Sleep(2 * time.Millisecond)
			drained = !time.Now().After(timeout)
		}
	} else if drained, err = drain(ctx, e, 100*time.Millisecond, timeout); err != nil {
		return err
	}
	if !drained {
		return fmt.Errorf("burn-down did not finish within %s", time.Until(timeout)+time.Since(start))
	}
	res.WallSeconds = time.Since(start).Seconds()
	if err := m.stopWorkers(ctx, w, res, true); err != nil {
		return err
	}
	win, err := e.store.TaskCompletionWindow(ctx, taskTypeName)
	if err != nil {
		return err
	}
	res.Completed = win.Completed
	res.WorkSeconds = win.LastFinished.Sub(win.FirstStarted).Seconds()
	if res.WorkSeconds > 0 {
		res.CompleteRate = float64(win.Completed) / res.WorkSeconds
	}
	res.CommitsPerTask = float64(res.Commits) / float64(max(res.Completed, 1))
	timings, err := e.store.CompletedTimings(ctx, taskTypeName)
	if err != nil {
		return err
	}
	runs := make([]time.Duration, len(timings))
	for i, t := range timings {
		runs[i] = t.FinishedAt.Sub(t.StartedAt)
	}
	res.RunLatency = percentiles(runs)
	log.Info("burned down", "completed", res.Completed, "per_second", int(res.CompleteRate), "commits_per_task", res.CommitsPerTask)
	return nil
}

// drain waits until no task of the bench's type is left unfinished,
// reading the rows every poll; it returns false if deadline passes first.
func drain(ctx context.Context, e *env, poll time.Duration, deadline time.Time) (bool, error) {
	for {
		more, err := e.store.HasUnfinished(ctx, taskTypeName)
		if err != nil || !more {
			return err == nil, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(poll)
	}
}

// stopWorkers stops the workers and records what the work phase used: CPU,
// the instances' peak memory (read before they exit: getrusage would count
// every child of the bench) and, with counts, the commits and statements.
func (m *meter) stopWorkers(ctx context.Context, w workers, res *Result, counts bool) error {
	peak := instancesPeak(w)
	if err := w.stop(); err != nil {
		return err
	}
	res.CPU = m.cpu()
	if peak > 0 {
		res.CPU.InstancesPeakRSSMB = peak
	}
	if !counts {
		return nil
	}
	var err error
	if res.Commits, err = m.commitsSince(ctx); err != nil {
		return err
	}
	return m.statements(ctx, res)
}

// instancesPeak is the peak resident memory of `wf run` instances while they
// still run (getrusage of children only tells the largest child ever).
func instancesPeak(w workers) float64 {
	if in, ok := w.(*instances); ok {
		return in.peakRSSMB()
	}
	return 0
}

// bulkEnqueue enqueues n tasks through the client in batches, several
// statements at once, on a pool of its own that it closes (so its
// connections' commits are counted before the work starts).
func bulkEnqueue(ctx context.Context, e *env, n int) (int, time.Duration, error) {
	pool, err := e.newPool(ctx, e.cfg.InsertConns)
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	cl := e.client(pool)
	req := client.Request{TaskType: taskTypeName, Inputs: payload(e.cfg.PayloadBytes)}
	// Warm up: the partition check and the statement cache.
	if _, err := cl.Enqueue(ctx, req); err != nil {
		return 0, 0, err
	}
	n--
	batches := make(chan int)
	var mu sync.Mutex
	inserted := 1
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for i := 0; i < e.cfg.InsertConns; i++ {
		g.Go(func() error {
			for size := range batches {
				reqs := make([]client.Request, size)
				for j := range reqs {
					reqs[j] = req
				}
				out, err := cl.EnqueueMany(gctx, reqs)
				if err != nil {
					return err
				}
				mu.Lock()
				inserted += len(out)
				mu.Unlock()
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(batches)
		for left := n; left > 0; left -= e.cfg.InsertBatch {
			select {
			case batches <- min(left, e.cfg.InsertBatch):
			case <-gctx.Done():
				return nil
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return 0, 0, err
	}
	return inserted, time.Since(start), nil
}
