// Package execution owns "run one task and record its outcome", for every
// way a task runs: the dispatcher (wf run), the worker (wf exec, and the
// HTTP API's SYNCHRONOUS runs through it) and remote completion (a remote
// worker reporting over HTTP). It holds the rule of a task type (lease,
// timeout, limits, retry policy, compiled once), Execute (one run, with its
// panic guard, timeout and reporters), the outcome decision (retry with
// backoff, DEAD_LETTER, FAILED) and the leased write of an outcome, so a
// task ends the same way whichever process ran it.
package execution

import (
	"math/rand/v2"
	"time"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// Defaults of a rule field left zero.
const (
	// DefaultLease is the visibility timeout of a task type that sets none
	// (and of an engine configured with none).
	DefaultLease = 5 * time.Minute
	// DefaultTimeout bounds one run of a task type that sets no timeout.
	DefaultTimeout = time.Hour
)

// Rule is how one (execution mode, task type) pair runs, compiled once from
// its task type's spec.
type Rule struct {
	Pair runners.Pair
	// Lease is the visibility timeout: how long a claim holds without a heartbeat.
	Lease time.Duration
	// Timeout bounds one run.
	Timeout time.Duration
	// PerInstance caps how many run at once in one instance (0: no cap but
	// the instance's slots).
	PerInstance int
	// Global caps how many run at once across all instances (0: no cap).
	Global int
	// PerTenant caps how many of one tenant run at once across all
	// instances (0: no cap).
	PerTenant int
	// RateStarts and RatePerTenant cap the starts per RateInterval across
	// all instances, of the type and of each tenant (0: no cap; a zero
	// RateInterval: no rate limit).
	RateStarts, RatePerTenant int
	RateInterval              time.Duration
	// Backoff is the delay before retry number retryCount+1.
	Backoff func(retryCount int) time.Duration
	// MaxSnoozes is how many times a task may be snoozed without counting
	// a retry (the spec's max_snoozes); past it, or when zero, a snooze is
	// a failed attempt.
	MaxSnoozes int
}

// DefaultBackoff is the delay policy of a task type that declares none:
// wftype.DefaultBackoff (2^retryCount seconds, ±10% jitter, at most an
// hour), with random jitter so a burst of failures does not retry in
// lockstep.
func DefaultBackoff(retryCount int) time.Duration {
	return wftype.DefaultBackoff.Delay(retryCount, rand.Float64())
}

// BackoffFunc turns a policy into a rule's Backoff, jittered at random.
func BackoffFunc(b wftype.Backoff) func(int) time.Duration {
	return func(n int) time.Duration { return b.Delay(n, rand.Float64()) }
}

// WithDefaults returns r with every zero field given its default.
func (r Rule) WithDefaults() Rule {
	if r.Lease <= 0 {
		r.Lease = DefaultLease
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	if r.Backoff == nil {
		r.Backoff = DefaultBackoff
	}
	return r
}

// Rules are the rules of every pair the specs declare.
type Rules map[runners.Pair]Rule

// For returns the rule of task's pair, defaults filled; a pair without a
// rule (a task type no spec declares any more) gets the defaults.
func (rs Rules) For(task *wftype.Task) Rule {
	pair := runners.Pair{Mode: task.ExecutionMode, TaskType: task.TaskType}
	r := rs[pair]
	r.Pair = pair
	return r.WithDefaults()
}

// Backoff returns the retry policy of a task type, whatever its mode, or
// DefaultBackoff for a type without a rule (the janitor's retries of a
// rescued task).
func (rs Rules) Backoff(taskType string) func(int) time.Duration {
	for _, mode := range []wftype.ExecutionMode{wftype.ModeAsync, wftype.ModeSync} {
		if r, ok := rs[runners.Pair{Mode: mode, TaskType: taskType}]; ok && r.Backoff != nil {
			return r.Backoff
		}
	}
	return DefaultBackoff
}

// Limits are the rule's claim-time limits, as the store enforces them:
// concurrency.global, concurrency.per_tenant and rate_limit.
func (r Rule) Limits() store.TypeLimits {
	return store.TypeLimits{
		Global: r.Global, PerTenant: r.PerTenant,
		RateStarts: r.RateStarts, RatePerTenant: r.RatePerTenant, RateInterval: r.RateInterval,
	}
}

// Limits returns the claim-time limits of the task types that have any, by
// type (a type's two execution modes share them).
func (rs Rules) Limits() map[string]store.TypeLimits {
	out := map[string]store.TypeLimits{}
	for pair, r := range rs {
		if l := r.Limits(); l != (store.TypeLimits{}) {
			out[pair.TaskType] = l
		}
	}
	return out
}
