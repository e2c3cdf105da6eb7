package wftype

import (
	"math"
	"time"
)

// Backoff is a retry delay policy: the delay before retry n (n = the task's
// retry_count) is min(Max, Base*Factor^n), moved by up to ±Jitter of itself,
// and never more than Max. Task type specs compile theirs; DefaultBackoff is
// the policy of a task type that declares none.
type Backoff struct {
	Base   time.Duration
	Factor float64
	Max    time.Duration
	Jitter float64
}

// DefaultBackoff is the seed's policy: 2^retry_count seconds, capped at an
// hour, with 10% jitter.
var DefaultBackoff = Backoff{Base: time.Second, Factor: 2, Max: time.Hour, Jitter: 0.1}

// Delay returns the delay before the retry numbered retryCount (0 for the
// first retry). rnd is a uniform random number in [0, 1) that places the
// jitter: 0 gives the shortest delay, 0.5 the nominal one. Values outside
// [0, 1] are clamped, and a negative retryCount counts as 0.
func (b Backoff) Delay(retryCount int, rnd float64) time.Duration {
	retryCount = max(retryCount, 0)
	rnd = min(max(rnd, 0), 1)
	nominal := float64(b.Base) * math.Pow(b.Factor, float64(retryCount))
	capped := min(nominal, float64(b.Max)) // an overflow to +Inf is capped too
	d := capped * (1 + b.Jitter*(2*rnd-1))
	d = min(max(d, 0), float64(b.Max))
	return time.Duration(d)
}
