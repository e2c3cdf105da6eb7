package dispatch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/wfhq/wf/engine/store"
)

// The tenant census: with fairness on (Config.Fair), a claim costs more
// than one that takes tasks by priority and age only (the fair statement
// finds the tenants of each pair and ranks their tasks), and with one
// tenant waiting both take the same tasks. So a fair claim that finds one
// tenant in all the pairs it claims (store.Claimed.OneTenant) lets the
// claims after it skip fairness, until one of these says the finding may
// be stale and the next claim is fair again:
//   - a task was queued since the fair claim began (signalbus.TaskQueued:
//     every enqueue sends it, so a tenant that enqueues is served fairly by
//     the very next claim, as without the census);
//   - censusClaims claims were made without fairness since, or the finding
//     is censusAge old (tasks that become due by time, retries and snoozes,
//     send no signal: they wait at most that long for their fair share).
//
// A flood of one tenant so burns down at the unfair claim's rate, with a
// fair claim every censusClaims or censusAge; with two tenants or more
// every claim is fair, as before. The bounds weigh a fair claim's cost
// (about 1.4× a plain one's per task with one tenant) against how long a
// tenant whose tasks become due by time may wait: a burn-down of wf run's
// defaults claims about 50 times a second (a few hundred tasks each), so
// 100 ms made a third of its claims fair, 250 ms one in twelve.
const (
	censusClaims = 32
	censusAge    = 250 * time.Millisecond
)

// census is what the last fair claim found; see above. It also keeps, per
// pair, where the next fair claim's scan of the tenants resumes (store.ClaimSlot.FairAfter): with more tenants
// waiting than a batch has room for, each claim serves the next ones.
type census struct {
	queued atomic.Bool // a task was queued since the last fair claim began

	mu     sync.Mutex
	one    bool      // the last fair claim found one tenant in all its pairs
	at     time.Time // when that claim began
	unfair int       // claims made without fairness since
	after  map[store.Pair]string
}

// resume sets each slot's FairAfter to where its pair's last scan ended.
func (c *census) resume(slots []store.ClaimSlot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range slots {
		slots[i].FairAfter = c.after[store.Pair{Mode: slots[i].Mode, TaskType: slots[i].TaskType}]
	}
}

// scanned keeps where a claim's scans of the tenants ended
// (store.Claimed.ScanEnd).
func (c *census) scanned(ends map[store.Pair]string) {
	if len(ends) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.after == nil {
		c.after = map[store.Pair]string{}
	}
	for p, end := range ends {
		c.after[p] = end
	}
}

// taskQueued records that a task was queued (a signal): the next claim is
// fair.
func (c *census) taskQueued() { c.queued.Store(true) }

// fairness returns what a claim beginning at now claims with: fair (f),
// or nil while the census lets it skip fairness. f nil (fairness off)
// stays nil.
func (c *census) fairness(f *store.Fairness, now time.Time) *store.Fairness {
	if f == nil || c.queued.Swap(false) {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.one || c.unfair >= censusClaims || now.Sub(c.at) >= censusAge {
		return f
	}
	c.unfair++
	return nil
}

// record keeps what a fair claim that began at `at` found (oneTenant: see
// store.Claimed.OneTenant), unless a fair claim that began later was
// recorded already.
func (c *census) record(oneTenant bool, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.Before(c.at) {
		return
	}
	c.one, c.at, c.unfair = oneTenant, at, 0
}
