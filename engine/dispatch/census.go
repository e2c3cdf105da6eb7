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
//     the very next claim, as without the census), unless the signal says
//     the one tenant found queued it (store.ParseQueued): a lone tenant's
//     stream of tasks (each enqueue a signal) is claimed without fairness,
//     which matters for its latency, as a fair claim costs more to plan and
//     to run;
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
// pair, where the next fair claim's scan of the tenants resumes
// (store.ClaimSlot.FairAfter): with more tenants waiting than a batch has
// room for, each claim serves the next ones.
//
// Claims may be out at once (Config.ClaimWorkers). A claim that begins
// while others of the pair are out begins from the same point, but passes
// over as many tenants as those serve at most (store.ClaimSlot.FairSkip,
// the sum of their Max): it serves the window after theirs, not the same
// tenants' next tasks. The point moves on in the order the claims began:
// to a claim's scan end once every claim begun before it ended, so a claim
// that ends first does not move it back.
type census struct {
	queued atomic.Bool // a task was queued since the last fair claim began

	mu     sync.Mutex
	one    string    // the one tenant the last fair claim found in all its pairs, if it did
	at     time.Time // when that claim began
	unfair int       // claims made without fairness since
	scans  map[store.Pair]*scan
}

// scan is where a pair's fair claims resume, and its claims out.
type scan struct {
	after string
	out   []*turn // in the order they began
}

// turn is one claim's part in a pair's scan.
type turn struct {
	max   int     // the tenants it serves at most (its slot's Max)
	ended bool    // it came back (or failed)
	end   *string // its scan end, when it had one
}

// resume sets each slot's FairAfter to where its pair's scan resumes and
// its FairSkip to the tenants the pair's claims out serve, and counts the
// claim among those out. The caller must hand the turns it returns (one
// per slot) to scanned once the claim came back or failed.
func (c *census) resume(slots []store.ClaimSlot) []*turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scans == nil {
		c.scans = map[store.Pair]*scan{}
	}
	turns := make([]*turn, len(slots))
	for i := range slots {
		p := store.Pair{Mode: slots[i].Mode, TaskType: slots[i].TaskType}
		sc := c.scans[p]
		if sc == nil {
			sc = &scan{}
			c.scans[p] = sc
		}
		skip := 0
		for _, o := range sc.out {
			skip += o.max
		}
		slots[i].FairAfter, slots[i].FairSkip = sc.after, skip
		turns[i] = &turn{max: slots[i].Max}
		sc.out = append(sc.out, turns[i])
	}
	return turns
}

// scanned records that the claim of slots, whose turns resume returned,
// came back with the scan ends ends (store.Claimed.ScanEnd; nil when it
// failed), and moves each pair's resume point past the claims that ended
// in the order they began.
func (c *census) scanned(slots []store.ClaimSlot, turns []*turn, ends map[store.Pair]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range slots {
		p := store.Pair{Mode: slots[i].Mode, TaskType: slots[i].TaskType}
		t := turns[i]
		t.ended = true
		if end, ok := ends[p]; ok {
			t.end = &end
		}
		sc := c.scans[p]
		for len(sc.out) > 0 && sc.out[0].ended {
			if sc.out[0].end != nil {
				sc.after = *sc.out[0].end
			}
			sc.out = sc.out[1:]
		}
	}
}

// taskQueued records that a task was queued (a signal with its payload):
// the next claim is fair, unless the payload names the one tenant the
// census found.
func (c *census) taskQueued(payload string) {
	if _, tenant := store.ParseQueued(payload); tenant != "" {
		c.mu.Lock()
		same := tenant == c.one
		c.mu.Unlock()
		if same {
			return
		}
	}
	c.queued.Store(true)
}

// fairness returns what a claim beginning at now claims with: fair (f),
// or nil while the census lets it skip fairness. f nil (fairness off)
// stays nil.
func (c *census) fairness(f *store.Fairness, now time.Time) *store.Fairness {
	if f == nil || c.queued.Swap(false) {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.one == "" || c.unfair >= censusClaims || now.Sub(c.at) >= censusAge {
		return f
	}
	c.unfair++
	return nil
}

// record keeps what a fair claim that began at `at` found (oneTenant: see
// store.Claimed.OneTenant; "" for none or a failed claim), unless a fair
// claim that began later was recorded already.
func (c *census) record(oneTenant string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.Before(c.at) {
		return
	}
	c.one, c.at, c.unfair = oneTenant, at, 0
}
