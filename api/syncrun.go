package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// runSync creates a SYNCHRONOUS task and runs it in front of its caller. The
// task is inserted and claimed by this instance in one transaction, so no
// dispatcher ever sees it PENDING; it is then run by the synchronous runner
// with its lease kept alive, and finished (COMPLETED, or FAILED: a
// synchronous failure is never retried, its caller saw it) like any other
// task, so it shows in the history. A request whose dedup key is held by a
// live task runs nothing and returns that task with dedup set.
//
// The type's concurrency limits hold for synchronous runs too: past
// concurrency.per_instance runs in this server, or concurrency.global ACTIVE
// tasks of the type anywhere, the request is refused with 429 and nothing
// is created.
func (s *Server) runSync(ctx context.Context, req client.Request) (task wftype.Task, dedup bool, err error) {
	pair := runners.Pair{Mode: wftype.ModeSync, TaskType: req.TaskType}
	runner := s.sync[pair]
	if runner == nil {
		return task, false, newProblem(http.StatusNotImplemented, typeNotImplemented, "Not implemented",
			"this server has no runner for SYNCHRONOUS task type %s", req.TaskType)
	}
	rule := s.cfg.Rules[pair]
	if !s.syncSlots.acquire(pair, rule.PerInstance) {
		return task, false, busy("%d runs of task type %s are already running in this server (concurrency.per_instance)", rule.PerInstance, req.TaskType)
	}
	defer s.syncSlots.release(pair)
	lease := cmp.Or(rule.Lease, dispatch.DefaultLease)
	timeout := cmp.Or(rule.Timeout, dispatch.DefaultTimeout)
	if wt := s.cfg.HTTP.WriteTimeout; wt > 2*time.Second {
		// The answer must still be writable when the run ends.
		timeout = min(timeout, wt-time.Second)
	}
	start := time.Now()
	err = pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		res, err := s.client.EnqueueTx(ctx, tx, req)
		if err != nil {
			return err
		}
		if res.Duplicate {
			task, dedup = res.Task, true
			return nil
		}
		st := s.store.WithTx(tx)
		if rule.Global > 0 {
			room, err := st.GlobalRoom(ctx, req.TaskType, rule.Global)
			if err != nil {
				return err
			}
			if room <= 0 {
				// Rolls the insert back: nothing is created.
				return busy("%d tasks of type %s are already running (concurrency.global)", rule.Global, req.TaskType)
			}
		}
		task, err = st.ClaimSyncTask(ctx, res.Task.ID, s.cfg.Owner, lease)
		return err
	})
	if err != nil || dedup {
		return task, dedup, err
	}
	s.metrics.Claimed([]wftype.Task{task}, time.Since(start))

	leaseCtx, loseLease := context.WithCancelCause(ctx)
	defer loseLease(nil)
	runCtx, cancel := context.WithTimeoutCause(leaseCtx, timeout, fmt.Errorf("run timeout of %s exceeded", timeout))
	defer cancel()
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); s.keepLease(runCtx, loseLease, task.ID, lease) }()
	began := time.Now()
	outputs, runErr := s.execute(runCtx, runner, &task)
	ran := time.Since(began)
	cancel()
	<-hbDone

	outcome := dispatch.Outcome(&task, rule, outputs, runErr, time.Now())
	status := outcome.Status
	// The outcome is written even when the caller went away.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer wcancel()
	if _, err := s.store.FinishTasks(wctx, store.FinishParams{Owner: s.cfg.Owner}, []store.Finish{outcome}); err != nil {
		return task, false, err
	}
	s.metrics.Finished(&task, status, ran)
	task, err = s.store.GetTask(wctx, task.ID)
	return task, false, err
}

// busy is a 429 problem: a concurrency limit of the task type is reached.
func busy(format string, args ...any) *problem {
	p := newProblem(http.StatusTooManyRequests, typeBusy, "Too many runs", format+"; retry later", args...)
	p.header = http.Header{"Retry-After": {"1"}}
	return p
}

// syncSlots counts the synchronous runs in progress in this server, per
// pair, for concurrency.per_instance.
type syncSlots struct {
	mu      sync.Mutex
	running map[runners.Pair]int
}

// acquire takes a run of pair if fewer than limit are running (limit 0:
// no limit) and reports whether it did; release gives it back.
func (c *syncSlots) acquire(pair runners.Pair, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limit > 0 && c.running[pair] >= limit {
		return false
	}
	if c.running == nil {
		c.running = map[runners.Pair]int{}
	}
	c.running[pair]++
	return true
}

// release ends a run that acquire took.
func (c *syncSlots) release(pair runners.Pair) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[pair]--; c.running[pair] <= 0 {
		delete(c.running, pair)
	}
}

// keepLease extends the lease of a synchronous run every third of it, and
// cancels the run when the lease is gone (the task was cancelled).
func (s *Server) keepLease(ctx context.Context, cancel context.CancelCauseFunc, id uuid.UUID, lease time.Duration) {
	t := time.NewTicker(max(lease/3, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		held, err := s.store.Heartbeat(ctx, s.cfg.Owner, []store.Lease{{ID: id, Lease: lease}}, nil)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("extending the lease of a synchronous run failed", "task_id", id, "err", err)
			}
			continue
		}
		if len(held) == 0 {
			cancel(fmt.Errorf("the task was cancelled or its lease taken"))
			return
		}
	}
}

// execute runs the task with its reporters, turning a panic into an error,
// and merges the reporters' outputs into the handler's.
func (s *Server) execute(ctx context.Context, runner runners.Runner, task *wftype.Task) (outputs json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("synchronous runner panicked", "task_id", task.ID, "task_type", task.TaskType, "panic", v)
			outputs, err = nil, fmt.Errorf("runner panicked: %v", v)
		}
	}()
	rep, err := s.cfg.Reporters(task)
	if err != nil {
		return nil, fmt.Errorf("error creating reporters: %w", err)
	}
	outputs, err = runner.Run(ctx, task, rep)
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	extra, ferr := rep.Finish(fctx)
	if ferr != nil && err == nil {
		err = fmt.Errorf("error finishing reports: %w", ferr)
	}
	if err != nil {
		return outputs, err
	}
	return dispatch.MergeOutputs(outputs, extra)
}
