package store

import (
	"sync"

	"github.com/wfhq/wf/wftype"
)

// The rotation of fair claims (claim_fair.go).
//
// A fair claim serves at most max_claim tenants of a pair, found by a loose
// scan of the tenants by name, backwards. Started from the same end every
// time, a claim with less room than there are tenants with due tasks (the
// common case: one free slot, many tenants) would serve the same few tenants
// again and again, and with a steady stream the last ones by name would
// starve. So each claim resumes the scan where the last one left it: after
// the last tenant it served, wrapping round past the first name to the last.
// With every tenant of weight 1, a batch of b tasks serves b tenants the
// rotation has not served since it last passed them, so each of N tenants is
// served at least once in every ceil(N/b) claims of an instance.
//
// Why resume after the last tenant served, and not start at a random or
// hashed point: tenant names are not spread evenly over any key space that
// an index could seek to at random, so a random point would favour the
// tenants after the widest gaps between names, and gives no bound at all;
// the rotation gives an exact one. Its cost is one cursor per pair, kept by
// each instance in memory (its store) rather than in the database: a
// shared cursor would be a row that every claim writes, and instances that
// share one would still claim different tasks of the same tenants (SKIP
// LOCKED). Each instance goes round on its own, which keeps the bound per
// instance.
//
// Weights hold across claims too, as a weighted round-robin: in one turn of
// the rotation a tenant of weight w gets w tasks. Inside a claim the k-th
// task of a tenant of weight w comes at turn (k + u) / w, where u is how
// many it already had in this turn of the rotation, and ties go to the
// tenant the rotation reaches first; the rotation passes a tenant once it
// has had its w (a tenant of weight 3 keeps the head of the rotation for
// three one-task claims). So a batch serves the tenants at the head of the
// rotation (a prefix of those the claim went round, the last of which may
// want more), and a heavier tenant further on may take its first tasks
// early: those count in u, kept here until the rotation passes it. A weight
// below 1 is exact inside a claim; across claims it counts against the
// tenants in the same claims, not against all (a rotation visit gives every
// tenant at least one task).

// rotation holds the cursor of each pair for the fair claims of one store
// (and its copies).
type rotation struct {
	mu sync.Mutex
	at map[rotationPair]*rotationCursor
}

// rotationPair is a pair's (execution mode, task type).
type rotationPair struct{ mode, taskType string }

// rotationCursor is where a pair's rotation stands.
type rotationCursor struct {
	// after is the last tenant the rotation passed; "" before the first
	// claim: the next claim starts with the tenant before it by name.
	after string
	// stay starts the next claim at after itself, which wants more tasks
	// in this turn.
	stay bool
	// used are the tasks each tenant had in this turn of the rotation, of
	// the tenants it has not passed yet, with the claim that last served
	// each (a tenant whose tasks went is forgotten after forgetUsedAfter
	// claims).
	used map[string]usedTasks
	// claims counts this pair's claims.
	claims int
}

// usedTasks is what a tenant had in this turn of the rotation.
type usedTasks struct {
	n    float64
	last int
}

// forgetUsedAfter is how many claims of a pair a tenant's count of tasks in
// the turn outlives the last claim that served it. A tenant not yet passed
// is among the next claim's tenants, so only one whose tasks went (done,
// cancelled, paused) stays unserved that long.
const forgetUsedAfter = 16

// args returns the claim statement's rotation arguments for the pairs of
// modes and types: the tenant each starts after, whether at it, and the
// tasks tenants had in this turn of the rotation (four arrays).
func (r *rotation) args(modes, types []string) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	after, stay := make([]string, len(types)), make([]bool, len(types))
	var usedModes, usedTypes, usedTenants []string
	var used []float64
	for i := range types {
		c := r.at[rotationPair{modes[i], types[i]}]
		if c == nil {
			continue
		}
		after[i], stay[i] = c.after, c.stay
		for tenant, u := range c.used {
			usedModes, usedTypes = append(usedModes, modes[i]), append(usedTypes, types[i])
			usedTenants, used = append(usedTenants, tenant), append(used, u.n)
		}
	}
	return []any{after, stay, usedModes, usedTypes, usedTenants, used}
}

// advance moves the rotation of each pair tasks came from: places holds,
// for each task, its tenant's place in the tenants its claim went round
// (nil: not one of them). The rotation passes the tenants of the served
// prefix of those places that had their weight's tasks.
func (r *rotation) advance(tasks []wftype.Task, places []*int32, fair *Fairness) {
	type served struct {
		tenant string
		n      float64
	}
	byPair := map[rotationPair]map[int32]served{}
	for i, t := range tasks {
		if places[i] == nil {
			continue
		}
		k := rotationPair{string(t.ExecutionMode), t.TaskType}
		if byPair[k] == nil {
			byPair[k] = map[int32]served{}
		}
		s := byPair[k][*places[i]]
		s.tenant, s.n = t.SchemaName, s.n+1
		byPair[k][*places[i]] = s
	}
	if len(byPair) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[rotationPair]*rotationCursor{}
	}
	for k, places := range byPair {
		c := r.at[k]
		if c == nil {
			c = &rotationCursor{used: map[string]usedTasks{}}
			r.at[k] = c
		}
		c.claims++
		for _, s := range places {
			c.used[s.tenant] = usedTasks{n: c.used[s.tenant].n + s.n, last: c.claims}
		}
		// Pass the served prefix: every tenant but its last, which only
		// when it had its weight's tasks.
		for p := int32(1); ; p++ {
			s, ok := places[p]
			if !ok {
				break
			}
			if _, next := places[p+1]; next || c.used[s.tenant].n >= fair.weight(s.tenant) {
				delete(c.used, s.tenant)
				c.after, c.stay = s.tenant, false
				continue
			}
			c.after, c.stay = s.tenant, true
			break
		}
		for tenant, u := range c.used {
			if c.claims-u.last > forgetUsedAfter {
				delete(c.used, tenant)
			}
		}
	}
}

// weight is a tenant's weight in f (1 when not named; f may be nil).
func (f *Fairness) weight(tenant string) float64 {
	if f == nil {
		return 1
	}
	if w, ok := f.Weights[tenant]; ok {
		return w
	}
	return 1
}
