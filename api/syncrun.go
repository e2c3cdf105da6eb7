package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/worker"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// newSyncWorker builds the worker that runs SYNCHRONOUS tasks in front of
// their callers: the engine's one way to run a task (engine/worker over
// engine/execution), under this server's owner id, with the synchronous
// runners. A run is bounded by the write timeout (the answer must still be
// writable when it ends), refused when a limit of its type has no room (the
// rate windows read on the server's clock), and finished as FAILED when its
// caller goes away. It is not held by pauses, which hold the queue. With
// tracing on, the run's span is a child of the request's server span.
func (s *Server) newSyncWorker() (*worker.Worker, error) {
	var maxTimeout time.Duration
	if wt := s.cfg.HTTP.WriteTimeout; wt > 2*time.Second {
		maxTimeout = wt - time.Second
	}
	return worker.New(worker.Config{
		Store: s.store, Owner: s.cfg.Owner, Capabilities: s.sync, Rules: s.cfg.Rules,
		Reporters: s.cfg.Reporters, MaxTimeout: maxTimeout, FinishWhenStopped: true,
		Observer: s.metrics, Logger: s.log, TracerProvider: s.cfg.TracerProvider, Clock: s.cfg.Clock,
	})
}

// runSync creates a SYNCHRONOUS task and runs it in front of its caller. The
// task is inserted and claimed by this instance in one transaction, so no
// dispatcher ever sees it PENDING; it is then run by the synchronous runner
// with its lease kept alive, and finished (COMPLETED, or FAILED: a
// synchronous failure is never retried, its caller saw it) like any other
// task, so it shows in the history. A request whose dedup key is held by a
// live task runs nothing and returns that task with dedup set.
//
// The type's limits hold for synchronous runs too: past
// concurrency.per_instance runs in this instance (these and the
// dispatcher's, counted in Config.InstanceRuns), concurrency.global ACTIVE
// tasks of the type anywhere or per_tenant of the tenant, or rate_limit's
// starts in the window, the request is refused with 429 and nothing is
// created (Retry-After: the rest of the rate window, else 1 second); a run
// that starts counts as a start of its window.
func (s *Server) runSync(ctx context.Context, req client.Request) (task wftype.Task, dedup bool, err error) {
	pair := runners.Pair{Mode: wftype.ModeSync, TaskType: req.TaskType}
	if s.sync[pair] == nil {
		return task, false, newProblem(http.StatusNotImplemented, typeNotImplemented, "Not implemented",
			"this server has no runner for SYNCHRONOUS task type %s", req.TaskType)
	}
	if limit := s.cfg.Rules[pair].PerInstance; limit > 0 {
		// One count with the dispatcher's runs in this instance.
		ok, err := s.cfg.InstanceRuns.Acquire(ctx, pair, limit)
		if err != nil {
			return task, false, fmt.Errorf("error waiting for room under concurrency.per_instance: %w", err)
		}
		if !ok {
			// A request whose dedup key a live task holds runs nothing:
			// it is answered with that task, which may be the very run
			// that fills the count.
			existing, err := s.client.Duplicate(ctx, req)
			if err != nil {
				return task, false, err
			}
			if existing != nil {
				return *existing, true, nil
			}
			return task, false, busy(0, "this instance's limit of %d running tasks of type %s is reached (concurrency.per_instance)", limit, req.TaskType)
		}
		defer s.cfg.InstanceRuns.Release(pair, 1)
	}
	claim, existing, err := s.syncWorker.CreateOrFind(ctx, s.client, req)
	var limited *worker.BusyError
	switch {
	case errors.As(err, &limited):
		return task, false, busy(limited.RetryAfter, "%s", limited.Error())
	case err != nil:
		return task, false, err
	case existing != nil:
		return *existing, true, nil
	}
	res, err := s.syncWorker.Run(ctx, claim)
	if errors.Is(err, worker.ErrLeaseLost) {
		// Cancelled while it ran: the task as it is now says so.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		task, err = s.store.GetTask(wctx, claim.Task.ID)
		return task, false, err
	}
	return res.Task, false, err
}

// busy is a 429 problem: a limit of the task type is reached. Its
// Retry-After is retryAfter in whole seconds, rounded up (the end of a
// rate window that has no room), at least 1 (a concurrency limit, whose
// room comes back when any run ends).
func busy(retryAfter time.Duration, format string, args ...any) *problem {
	p := newProblem(http.StatusTooManyRequests, typeBusy, "Too many runs", format+"; retry later", args...)
	secs := max(int64(math.Ceil(retryAfter.Seconds())), 1)
	p.header = http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}}
	return p
}
