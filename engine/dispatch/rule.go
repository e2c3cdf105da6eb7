package dispatch

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// Rule is how the dispatcher treats one (execution mode, task type) pair,
// compiled from the task type's spec.
type Rule struct {
	Pair runners.Pair
	// Lease is the visibility timeout: how long a claim holds without a heartbeat.
	Lease time.Duration
	// Timeout bounds one run.
	Timeout time.Duration
	// PerInstance caps how many run at once in this instance (0: no cap but Slots).
	PerInstance int
	// Global caps how many run at once across all instances (0: no cap).
	Global int
	// Backoff is the delay before retry number retryCount+1.
	Backoff func(retryCount int) time.Duration
}

// Defaults used when a rule leaves a field zero.
const (
	DefaultLease   = 5 * time.Minute
	DefaultTimeout = time.Hour
)

// DefaultBackoff is the seed's policy, 2^retryCount seconds, capped at one
// hour, with ±10% jitter so a burst of failures does not retry in lockstep.
func DefaultBackoff(retryCount int) time.Duration {
	d := math.Min(math.Pow(2, float64(retryCount)), 3600)
	jitter := 1 + (rand.Float64()*2-1)*0.1
	return time.Duration(d * jitter * float64(time.Second))
}

func (r Rule) withDefaults() Rule {
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

// Decide turns a run's error into the task's next status: COMPLETED on
// success; FAILED for a permanent error or a SYNCHRONOUS run (its caller saw
// it fail); PENDING with a backoff while retries remain; else DEAD_LETTER.
func Decide(task *wftype.Task, runErr error, now time.Time, backoff func(int) time.Duration) (status wftype.TaskStatus, retryCount int, runAfter *time.Time) {
	switch {
	case runErr == nil:
		return wftype.StatusCompleted, task.RetryCount, nil
	case wftype.IsPermanent(runErr) || task.ExecutionMode == wftype.ModeSync:
		return wftype.StatusFailed, task.RetryCount, nil
	case task.RetryCount < task.MaxRetries:
		at := now.Add(backoff(task.RetryCount))
		return wftype.StatusPending, task.RetryCount + 1, &at
	default:
		return wftype.StatusDeadLetter, task.RetryCount, nil
	}
}
