package store

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// ClaimSlot is how many tasks of one (execution mode, task type) pair the
// caller can run now, and the lease each claimed task gets.
type ClaimSlot struct {
	Mode     wftype.ExecutionMode
	TaskType string
	Max      int
	Lease    time.Duration
	// FairAfter is, for a fair claim, where the scan of the pair's tenants
	// begins: the tenants below it by name first, last one first, then
	// (it wraps) the others from the last by name down to it. Pass the
	// pair's Claimed.ScanEnd of the last fair claim, so that when more
	// tenants wait than a batch has room for, each claim serves the next
	// ones; empty begins at the last tenant by name.
	FairAfter string
	// FairSkip is, for a fair claim, how many tenants its scan passes over
	// from FairAfter before the ones it serves: those that claims of the
	// same caller still out, begun from the same FairAfter, serve (the sum
	// of their Max). Concurrent claims so serve one window after the other
	// rather than the same tenants twice. When the scan runs out of
	// tenants before it has passed over FairSkip, the claim serves every
	// tenant it found, as with none. A claim out may serve fewer tenants
	// than its Max (Claimed.LeftOut says so): the next FairAfter is then
	// its ScanEnd, not that of a claim that passed over its window.
	FairSkip int
}

// Pair is an (execution mode, task type) pair.
type Pair struct {
	Mode     wftype.ExecutionMode
	TaskType string
}

// ClaimParams selects what ClaimTasks may take.
type ClaimParams struct {
	Owner string
	Slots []ClaimSlot
	Total int        // at most this many tasks in all
	Now   *time.Time // nil: the database clock
	// Global caps, per task type, how many of its tasks may be ACTIVE
	// across all instances (concurrency.global). A claim of a type capped
	// here counts its ACTIVE tasks and claims under the type's advisory
	// lock, in one transaction, so the cap holds exactly however many
	// instances claim at once; claims of uncapped types take no lock.
	Global map[string]int
	// Limits are the other claim-time limits of task types: per tenant
	// and rate limits (claim_limited.go), exact in the same way; a type's
	// Global here and in Global is the same cap.
	Limits map[string]TypeLimits
	// Fair, when set, shares each pair's batch among the tenants with due
	// tasks of it, by weight (claim_fair.go); nil claims highest priority,
	// then oldest first, whoever's the tasks are.
	Fair *Fairness
}

// Fairness is how a fair claim weighs tenants.
type Fairness struct {
	// Weights by tenant (schema_name); a tenant not named weighs 1. A
	// tenant of weight 2 gets twice the share of a batch of one of weight
	// 1 when both have due tasks.
	Weights map[string]float64
}

// Claimed is what one claim took.
type Claimed struct {
	// Tasks are the claimed tasks, highest priority then oldest first.
	Tasks []wftype.Task
	// Room holds, for each globally capped type the claim took tasks of,
	// how many of its tasks could start when the claim ran: its cap minus
	// its ACTIVE tasks. A type that got Room tasks filled its cap, so more of
	// them may be waiting for the room its runs free.
	Room map[string]int
	// OneTenant names the tenant whose PENDING tasks alone the claim found,
	// in all its pairs together, when the claim was fair (ClaimParams.Fair,
	// or of types with limits, always fair): a claim without fairness would
	// have taken the same tasks. Empty when it found several tenants, could
	// not tell (a pair's scan of the tenants stopped at the batch's room) or
	// took nothing. A caller may skip fairness for its next claims while
	// that still holds; a task queued since sends a signal
	// (signalbus.TaskQueued) whose payload names its tenant when it can
	// (ParseQueued).
	OneTenant string
	// ScanEnd holds, for each pair a fair claim took tasks of, the pair's
	// FairAfter for the next claim: the tenant before the first one its
	// scan visited that the batch left out while it served tenants visited
	// after it (a tenant of weight below 1, whose turn comes later; a
	// tenant whose tasks of a higher priority went first), so that one's
	// turn is the next claim's; else the last tenant in scan order the
	// batch served from its share; else the last its scan visited.
	ScanEnd map[Pair]string
	// LeftOut holds the pairs of ScanEnd whose batch left out tenants its
	// scan visited after ScanEnd, with due tasks it had no room for (a
	// claim of several pairs cut to Total, a heavier tenant taking more of
	// the batch, a lighter one's later turn): their turn is the next
	// claim's. A claim of the pair that
	// began while this one was out passed over them (FairSkip counts this
	// one's Max tenants): the caller resumes at this ScanEnd, not at that
	// claim's.
	LeftOut map[Pair]bool
}

// claimTasksSQL claims, in one statement, up to each pair's free slots and at
// most $5 tasks in all, highest priority then oldest first. Each pair is read
// from the partial index on PENDING rows with FOR UPDATE SKIP LOCKED, so
// concurrent claimers never wait on or take each other's rows.
//
// The UPDATE finds the locked rows by primary key (task_id = ANY of the
// candidates), not by a join: a join lets the planner hash the candidates and
// scan whole partitions sequentially, which it does as soon as a batch is
// large next to the table (a backlog in the current month), turning each
// claim into a scan of every waiting task. Without a status condition here
// the partial index on PENDING rows cannot be picked either, so every
// partition is read through its primary key. The rows are locked by this
// statement, so they are still PENDING. The range of the candidates'
// creation times prunes, when the statement runs, the partitions they are
// not in: older partitions of finished tasks are not probed at all. The
// parameters go through sub-selects so that the cached generic plan is
// estimated like a custom one, and PostgreSQL keeps it rather than plan
// every claim anew. Paused task types and tenants (tasks.pauses) are
// skipped: see pausedTypesSQL.
const claimTasksSQL = claimSlotsSQL + `,
candidates AS (
    SELECT c.task_id, c."timestamp"
    FROM slots s
    CROSS JOIN LATERAL (
        SELECT t.task_id, t."timestamp", t.priority, t.run_after
        ` + dueOfSlotSQL + `
        ` + claimOrderSQL + `
        LIMIT s.max_claim
        FOR UPDATE SKIP LOCKED
    ) c
    ORDER BY c.priority DESC, c.run_after, c.task_id
    LIMIT (SELECT $5::int)
)` + claimUpdateSQL + `
RETURNING ` + taskColumnsT

// claimSlotsSQL is the first CTE of claimTasksSQL and claimCappedSQL:
// slots, a row per pair the claim reads ($1 to $4: execution mode, task
// type, free slots, lease seconds), paused task types left out. The fair
// and limited claims carry more columns per pair and have their own.
const claimSlotsSQL = `
WITH slots AS (
    SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::int[]), (SELECT $4::float8[]))
        AS s(execution_mode, task_type, max_claim, lease_seconds)
    WHERE ` + pausedTypesSQL + `
)`

// claimTimeSQL is a claim's time: ClaimParams.Now ($6), else the
// database's clock when the claim statement began. Not now(), the time its
// transaction began: a limited claim's transaction begins with the lock of
// its types (globalLockSQL) and may wait there while another claim counts
// starts in a newer rate window; counted in the window its transaction
// began in, the claim would find that window's starts gone from
// tasks.rate_windows (which keeps the newest window) and start its whole
// room again on top of them.
const claimTimeSQL = `coalesce($6::timestamptz, statement_timestamp())`

// dueOfSlotSQL and claimOrderSQL are the read of every claim from the head
// of a pair: the PENDING tasks of slot s (a row of slots) that are due and
// not of a paused tenant, then (after any further conditions) highest
// priority then oldest first, the order of tasks_claim_idx.
const (
	dueOfSlotSQL = `FROM tasks.tasks t
        WHERE t.status = 'PENDING'
          AND t.task_type = s.task_type
          AND t.execution_mode = s.execution_mode
          AND t.run_after <= ` + claimTimeSQL + `
          AND ` + pausedTenantsSQL
	claimOrderSQL = `ORDER BY t.priority DESC, t.run_after, t.task_id`
)

// claimUpdateSQL is the end of both claim statements: it moves the
// candidates (a CTE of task_id and "timestamp") to ACTIVE with the lease of
// their pair in slots.
const claimUpdateSQL = `
UPDATE tasks.tasks t
SET status            = 'ACTIVE',
    owner_id          = $7,
    attempts          = t.attempts + 1,
    started_at        = ` + claimTimeSQL + `,
    last_heartbeat_at = ` + claimTimeSQL + `,
    locked_until      = ` + claimTimeSQL + ` + make_interval(secs => (
                            SELECT s.lease_seconds FROM slots s
                            WHERE s.task_type = t.task_type AND s.execution_mode = t.execution_mode))
WHERE t.task_id = ANY (ARRAY(SELECT task_id FROM candidates))
  AND t."timestamp" >= (SELECT min("timestamp") FROM candidates)
  AND t."timestamp" <= (SELECT max("timestamp") FROM candidates)`

// ClaimTasks is Claim for callers that need only the tasks.
func (s *Store) ClaimTasks(ctx context.Context, p ClaimParams) ([]wftype.Task, error) {
	c, err := s.Claim(ctx, p)
	return c.Tasks, err
}

// Claim moves up to Total PENDING tasks that are due to ACTIVE, owned by
// Owner, and returns them. Pairs with no free slot are skipped. Without a
// global cap among the pairs it claims, it runs one statement and takes no
// lock; with one, it takes the capped types' advisory locks and then counts
// and claims, in one transaction and one round trip (claim_capped.go).
func (s *Store) Claim(ctx context.Context, p ClaimParams) (Claimed, error) {
	args, ok := claimArgs(p)
	if !ok {
		return Claimed{}, nil
	}
	var c Claimed
	var err error
	types, lims := limitsOf(p)
	onlyGlobal := !slices.ContainsFunc(lims, func(l TypeLimits) bool { return !l.onlyGlobal() })
	if len(types) > 0 && (p.Fair != nil || !onlyGlobal) {
		c, err = s.claimLimited(ctx, p, args, types, lims)
	} else if types, caps := globalCaps(p); len(types) > 0 {
		c, err = s.claimCapped(ctx, args, types, caps)
	} else if p.Fair != nil {
		c, err = s.claimFair(ctx, append(append(args, fairArgs(p, p.Fair)...), fairSkips(p)), p.Total)
	} else {
		c.Tasks, err = s.claimWith(ctx, args, p.Total)
	}
	if err != nil {
		return Claimed{}, err
	}
	// UPDATE … RETURNING has no order: hand tasks out highest priority, oldest first.
	slices.SortFunc(c.Tasks, func(a, b wftype.Task) int {
		if a.Priority != b.Priority {
			return b.Priority - a.Priority
		}
		if c := a.RunAfter.Compare(b.RunAfter); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	return c, nil
}

// claimWith claims with claimTasksSQL, one statement: the hot path. total
// is the most it can return.
func (s *Store) claimWith(ctx context.Context, args []any, total int) ([]wftype.Task, error) {
	var tasks []wftype.Task
	err := s.withPlanGuard(ctx, func(db DBTX) (int, error) {
		tasks = make([]wftype.Task, 0, total)
		sc := newTaskScanner()
		err := queryEach(ctx, db, "claiming tasks", claimTasksSQL, func(row pgx.Row) error {
			t, err := sc.scan(row)
			if err == nil {
				tasks = append(tasks, t)
			}
			return err
		}, args...)
		return len(tasks), err
	})
	return tasks, err
}

// claimArgs returns the claim statement's arguments, or false when no pair
// has a free slot.
func claimArgs(p ClaimParams) ([]any, bool) {
	var modes, types []string
	var maxes []int32
	var leases []float64
	for _, sl := range claimable(p) {
		modes = append(modes, string(sl.Mode))
		types = append(types, sl.TaskType)
		maxes = append(maxes, int32(min(sl.Max, p.Total)))
		leases = append(leases, sl.Lease.Seconds())
	}
	if len(types) == 0 || p.Total <= 0 {
		return nil, false
	}
	return []any{modes, types, maxes, leases, p.Total, p.Now, p.Owner}, true
}

// claimable returns the slots of p a claim asks for: those with room.
func claimable(p ClaimParams) []ClaimSlot {
	out := make([]ClaimSlot, 0, len(p.Slots))
	for _, sl := range p.Slots {
		if sl.Max > 0 {
			out = append(out, sl)
		}
	}
	return out
}

// ClaimSQL returns the claim statement, for EXPLAIN in tests and benchmarks.
func ClaimSQL() string { return claimTasksSQL }

// HasDueTasks reports whether any PENDING task of the given types is due,
// leaving out paused types and tenants (a paused backlog must not wake an
// idle follower at every poll). It is the one cheap query an idle follower
// runs per poll interval.
func (s *Store) HasDueTasks(ctx context.Context, taskTypes []string) (bool, error) {
	const q = `
SELECT EXISTS (
    SELECT 1 FROM unnest($1::text[]) AS s(task_type)
    CROSS JOIN LATERAL (
        SELECT 1 FROM tasks.tasks t
        WHERE t.status = 'PENDING' AND t.task_type = s.task_type AND t.run_after <= now()
          AND ` + pausedTenantsSQL + `
        LIMIT 1
    ) due
    WHERE ` + pausedTypesSQL + `
)`
	var ok bool
	err := s.db.QueryRow(ctx, q, taskTypes).Scan(&ok)
	return ok, wrap("looking for due tasks", err)
}
