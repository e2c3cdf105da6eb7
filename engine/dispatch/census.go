package dispatch

import (
	"slices"
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
// claims after it of those pairs skip fairness (a claim of a pair it did
// not scan, such as one whose per-instance cap left it no slot then, is
// fair), until one of these says the finding may be stale and the next
// claim is fair again:
//   - a task was queued since the fair claim began (signalbus.TaskQueued:
//     every enqueue sends it, so a tenant that enqueues is served fairly by
//     the very next claim, as without the census), unless the signal says
//     the one tenant found queued it (store.ParseQueued): a lone tenant's
//     stream of tasks (each enqueue a signal) is claimed without fairness,
//     which matters for its latency, as a fair claim costs more to plan and
//     to run. Such a signal is passed over against the finding of the
//     moment; a fair claim out then may have read the tasks before that
//     tenant's new one, so when it ends with another finding (another
//     tenant alone, or none), the next claim is fair;
//   - the finding is censusAge old: a task may be queued with no signal
//     this instance hears. A follower does not listen for task-queued
//     notifications (engine/leader): it learns of due work by its probe,
//     once a poll interval, which sends a signal without a tenant; and a
//     notification may be lost (a reconnection). Tasks that become due by
//     time need no signal: the fair scan finds a tenant by its PENDING
//     tasks, due or not, so a finding of one tenant already says none
//     other has any (a retry sends a signal too).
//
// A flood of one tenant so burns down at the unfair claim's rate, with a
// fair claim at least every censusAge; with two tenants or more every
// claim is fair, as before. censusAge is the default poll interval
// (engine.DefaultPollInterval): the leader's sweep and a follower's probe
// while work is due make a claim fair every poll interval anyway, and a
// follower hears of another tenant's task no sooner than its next poll.
// The bound was 250 ms and 32 claims: one claim in six of a lone flood
// was fair then, each at about 1.4× a plain claim's cost per task
// (BENCHMARKS.md, "Noisy neighbour"), for news that on a follower came
// by the poll, and on the leader by a signal that names its tenant. It
// stays for a poll interval set longer than it, and for a dispatcher run
// without an elector.
const censusAge = time.Second

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
// that ends first does not move it back. A claim may serve fewer tenants
// than its Max (its batch, of several pairs, cut to its total; a heavier
// tenant taking more of it): when it left tenants of its window out
// (store.Claimed.LeftOut), the claims begun while it was out passed over
// them, so the point stays at its scan end, and those claims' ends are
// let go (the tenants they served get their next turn early; none loses
// one).
type census struct {
	queued atomic.Bool // a task was queued since the last fair claim began

	mu    sync.Mutex
	one   string              // the one tenant the last fair claim found in all its pairs, if it did
	pairs map[store.Pair]bool // the pairs that claim scanned: a claim of any other is fair
	at    time.Time           // when that claim began
	out   []*fairClaim        // the fair claims out
	scans map[store.Pair]*scan
}

// fairClaim is one fair claim while it is out: when it began, its pairs
// and its turns in their scans, and the tenants whose signals taskQueued
// passed over meanwhile.
type fairClaim struct {
	at      time.Time
	pairs   []store.Pair
	turns   []*turn // one per pair
	dropped []string
}

// scan is where a pair's fair claims resume, and its claims out.
type scan struct {
	after string
	out   []*turn // in the order they began
}

// turn is one claim's part in a pair's scan.
type turn struct {
	max     int     // the tenants it serves at most (its slot's Max)
	ended   bool    // it came back (or failed)
	end     *string // its scan end, when it had one
	leftOut bool    // it left tenants of its window out after end
}

// begin counts a fair claim beginning at `at` of slots among those out: it
// sets each slot's FairAfter to where its pair's scan resumes and its
// FairSkip to the tenants the pair's claims out serve. The caller must
// hand what it returns to end once the claim came back or failed.
func (c *census) begin(slots []store.ClaimSlot, at time.Time) *fairClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scans == nil {
		c.scans = map[store.Pair]*scan{}
	}
	fc := &fairClaim{at: at, pairs: make([]store.Pair, len(slots)), turns: make([]*turn, len(slots))}
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
		fc.pairs[i], fc.turns[i] = p, &turn{max: slots[i].Max}
		sc.out = append(sc.out, fc.turns[i])
	}
	c.out = append(c.out, fc)
	return fc
}

// end records what the fair claim fc came back with (claimed; the zero
// value when it failed): its finding (store.Claimed.OneTenant), unless a
// fair claim that began later was recorded already, and its scan ends
// (store.Claimed.ScanEnd, LeftOut), moving each pair's resume point past
// the claims that ended, in the order they began.
func (c *census) end(fc *fairClaim, claimed store.Claimed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.out, fc); i >= 0 {
		c.out = slices.Delete(c.out, i, i+1)
	}
	if !fc.at.Before(c.at) {
		c.one, c.at = claimed.OneTenant, fc.at
		c.pairs = make(map[store.Pair]bool, len(fc.pairs))
		for _, p := range fc.pairs {
			c.pairs[p] = true
		}
		for _, tn := range fc.dropped {
			if tn != claimed.OneTenant {
				c.queued.Store(true) // its task may be after the claim's snapshot
			}
		}
	}
	for i, p := range fc.pairs {
		t := fc.turns[i]
		t.ended = true
		if end, ok := claimed.ScanEnd[p]; ok {
			t.end, t.leftOut = &end, claimed.LeftOut[p]
		}
		sc := c.scans[p]
		for len(sc.out) > 0 && sc.out[0].ended {
			o := sc.out[0]
			sc.out = sc.out[1:]
			if o.end != nil {
				sc.after = *o.end
			}
			if o.leftOut {
				// The claims out behind it passed over the tenants it
				// left out: resume at its end, whatever theirs.
				sc.out = nil
			}
		}
	}
}

// taskQueued records that a task was queued (a signal with its payload):
// the next claim is fair, unless the payload names the one tenant the
// census found (then the fair claims out note it: see end).
func (c *census) taskQueued(payload string) {
	if _, tenant := store.ParseQueued(payload); tenant != "" {
		c.mu.Lock()
		same := tenant == c.one
		if same {
			for _, fc := range c.out {
				if !slices.Contains(fc.dropped, tenant) {
					fc.dropped = append(fc.dropped, tenant)
				}
			}
		}
		c.mu.Unlock()
		if same {
			return
		}
	}
	c.queued.Store(true)
}

// fairness returns what a claim of slots beginning at now claims with:
// fair (f), or nil while the census lets it skip fairness. f nil
// (fairness off) stays nil.
func (c *census) fairness(f *store.Fairness, slots []store.ClaimSlot, now time.Time) *store.Fairness {
	if f == nil || c.queued.Swap(false) {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.one == "" || now.Sub(c.at) >= censusAge {
		return f
	}
	for _, s := range slots {
		if !c.pairs[store.Pair{Mode: s.Mode, TaskType: s.TaskType}] {
			return f // a pair the finding did not scan
		}
	}
	return nil
}
