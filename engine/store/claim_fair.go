package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// Fair claiming across tenants (ClaimParams.Fair).
//
// Without it a claim takes a pair's due tasks highest priority then oldest
// first, whoever's they are: a tenant that enqueues 100,000 tasks delays
// every other tenant's work until its backlog drains. With it, each claim
// batch is shared among the tenants (schema_name) that have due tasks of the
// pair, in proportion to their weights, within the highest priority class
// that is due: weighted round-robin over the batch, in one statement.
//
// Why round-robin within a batch and not deficit round-robin: a deficit
// counter per tenant would be state shared by every instance, written by
// every claim (a hot row per tenant, or a lock), and it would have to be
// kept right when tasks are cancelled, paused or deduplicated. Ranking each
// tenant's due tasks inside the batch needs no state at all: the k-th task
// of a tenant of weight w comes at position k/w, and the batch takes the
// lowest positions. Each batch is fair on its own, so a tenant that appears
// is served by the very next claim, whichever instance makes it, and the
// shares of a long backlog are the weights' (the deficit scheme's one gain,
// exact shares for tasks of different cost, does not apply: a claim counts
// tasks, not their run time).
//
// A batch serves at most max_claim tenants. When more wait (one free slot,
// many tenants), which ones is set by where the scan of the tenants begins:
// the caller passes, per pair, the last tenant the previous claim's scan
// visited (ClaimSlot.FairAfter, from Claimed.ScanEnd), and the scan resumes
// below it, wrapping from the first tenant by name to the last. The tenants
// so take turns across claims: a round-robin over the tenants whose only
// state is one name per pair in the caller's memory (each instance turns
// its own wheel; nothing is written). A tenant visited when it has nothing
// due, or only locked tasks, loses that turn; the fill below still gives
// the batch's room to whoever has due tasks. A caller with claims out at
// once passes the later ones the same FairAfter and, as ClaimSlot.FairSkip,
// the tenants the earlier ones serve: the scan passes over that many (they
// get no share) and serves the window after them, unless it ran out of
// tenants first (then it serves all it found, as without).
//
// The statement, per pair (claimFairSQL):
//   - tenants: the tenants with PENDING tasks of the pair, found by a loose
//     index scan of tasks_tenant_claim_idx (one probe per tenant, at most
//     max_claim of them: a batch cannot serve more), backwards by name from
//     below fair_after, then from the last tenant by name down to
//     fair_after;
//   - census and one_tenant (after the batch): the one tenant every pair's
//     scan found between them, if they all ran out (a claim without fairness
//     would take the same tasks: the caller may skip fairness for a while,
//     see engine/dispatch's census.go), and per pair where the next claim
//     resumes (marks, scan_ends): the tenant before the first one whose
//     share the batch locked but left out (a tenant of weight below 1,
//     whose turn comes after the others' first; a tenant whose tasks of a
//     higher priority went first after it), so that tenant comes first
//     next time whoever the batch served after it; else, or when it is the
//     first the batch locked a share of (resuming before it would repeat
//     the claim), the last tenant in scan order the batch served from its
//     share (among equal turns the batch prefers the tenants found first,
//     so those it leaves out are the last ones), else the last visited; and
//     whether the batch left out, after that tenant, tenants whose share it
//     had locked (left_out: a caller with claims out at once resumes there,
//     see ClaimSlot.FairSkip);
//   - fair: each tenant's share of the batch, ceil(max_claim × its weight ÷
//     the weights of the pair's tenants), of its due tasks highest priority
//     then oldest first, locked with SKIP LOCKED;
//   - fill: when the shares hold fewer tasks of the highest due priority
//     than the batch takes, the rest in the unfair order, from
//     tasks_claim_idx. The highest due priority is the highest among the
//     shares when every tenant got one (each share starts with its tenant's
//     highest due task); when the tenants filled the batch's max_claim
//     (others may be left out, maybe with tasks of a higher priority) it is
//     read from tasks_claim_idx, as the unfair claim reads its head;
//   - candidates: of those, the batch by (priority, rank in its tenant ÷
//     weight, age), at most max_claim per pair and $5 in all, except that
//     the first tenant the batch locked a share of has its first task's
//     turn at 1 at the latest (firsts, ranked): a tenant of weight below 1
//     so is served when it comes first (after a claim left it out), even
//     when heavier tenants visited after it would fill the batch with
//     turns below its 1 ÷ weight; without it, such a tenant resumed at
//     was left out again and again. Across claims a tenant of weight below
//     1 so gets a task on each of its turns, as one of weight 1 (a batch
//     has no fraction of a task to give it, and the rotation keeps no count
//     of the turns it had); within a batch its share is its weight's.
//     Priority comes
//     first, so a tenant whose share holds only lower priorities gets its
//     turn only after every due task of the higher ones in the batch: the
//     batch is fair within each priority class.
//
// Why backwards, and why the highest due priority is read only when the
// tenants fill the batch: a
// claim moves tasks out of the PENDING indexes from their front (highest
// priority, oldest), but their entries stay there, dead, until vacuum, so
// every forward scan from the front of a pair, or of a tenant, first steps
// over all that was claimed since (700 index pages after 90,000 tasks of a
// burn-down). The shares' scans must start there, like the unfair claim's
// one scan; the tenants' probes need not (the back of a tenant's range is
// its newest tasks), and the highest due priority is, but when there are
// more tenants than the batch has room for, that of the shares' first
// tasks. With one tenant the fair claim so reads what the unfair one reads,
// plus three probes of a few pages.
//
// The shares join the tenants back to the slots they came from: it changes
// no row, but the planner takes the recursive tenants for ~100 rows and, so
// joined, for about one, which keeps its estimate of the shares' rows (and
// of the sorts after them) near the truth. Without it the estimated cost
// passed jit_above_cost and every claim was JIT-compiled: 0.5–1 s for a
// statement that runs in 2 ms (TestClaimFairIsNotCompiled).
//
// Rows locked but not taken (the shares' rounding, the lower priorities of
// a share) are released when the statement commits. Paused task types and
// tenants are skipped as in every claim (pauses.go).

// fairLockedColumns are the columns the fair claim's CTEs carry of each
// locked task.
const fairLockedColumns = `t.task_id, t."timestamp", t.task_type, t.execution_mode, t.schema_name, t.priority, t.run_after`

// fairTenantProbe finds, for the pair of row r, the last tenant by name with
// PENDING tasks that meets the condition put in for %s: one descent of
// tasks_tenant_claim_idx per partition, to the back of that tenant's
// entries (its newest tasks, not the claimed ones' dead entries at its
// front).
const fairTenantProbe = `(
        SELECT t.schema_name FROM tasks.tasks t
        WHERE t.status = 'PENDING' AND t.task_type = r.task_type AND t.execution_mode = r.execution_mode%s
        ORDER BY t.schema_name DESC
        LIMIT 1
    )`

// fairCTEs returns the common table expressions of a fair claim after slots
// up to candidates: the batch, at most max_claim per pair and $5 in all. $8 and $9 are
// the tenants that have a weight and their weights (1 for the others);
// slots must come before them (with max_claim already cut to any room).
// Limited (claim_limited.go) also keeps each tenant within its room
// (tenant_room and limits must come before) and each type within its own
// (type_room).
func fairCTEs(limited bool) string {
	// A tenant's share, and which tenants get one.
	share := `ceil(tn.max_claim * coalesce(w.weight, 1)
                / sum(coalesce(w.weight, 1)) OVER (PARTITION BY tn.execution_mode, tn.task_type))::int`
	shareJoins, shareWhere, fillWhere, ranked, lone := "", "", "", "ranked", loneSQL
	if limited {
		lone = ""
		share = `least(` + share + `, ` + tenantRoomSQL + `)`
		shareJoins = `
    LEFT JOIN limits l ON l.task_type = tn.task_type
    LEFT JOIN tenant_room tr ON tr.task_type = tn.task_type AND tr.schema_name = tn.schema_name`
		shareWhere = `
      AND coalesce(` + tenantRoomSQL + `, 1) > 0`
		fillWhere = `
          AND t.schema_name <> ALL (ARRAY(SELECT x.schema_name FROM full_tenants x WHERE x.task_type = s.task_type))`
		ranked = "typed"
	}
	return `
tenants AS (
    SELECT r.execution_mode, r.task_type, r.max_claim, r.fair_after, r.fair_skip, 1 AS n, b.below IS NULL AS wrapped,
           coalesce(b.below, ` + fairTopTenant + `) AS schema_name
    FROM slots r
    CROSS JOIN LATERAL (SELECT ` + fairTenantBelowAfter + ` AS below OFFSET 0) b
    UNION ALL
    SELECT r.execution_mode, r.task_type, r.max_claim, r.fair_after, r.fair_skip, r.n + 1, r.wrapped OR b.below IS NULL,
           (CASE WHEN b.below IS NOT NULL THEN b.below WHEN NOT r.wrapped THEN ` + fairTopTenant + ` END)::varchar(255)
    FROM tenants r
    CROSS JOIN LATERAL (SELECT ` + fairNextTenant + ` AS below OFFSET 0) b
    WHERE r.schema_name IS NOT NULL AND r.n < r.max_claim + r.fair_skip
),
weights AS (
    SELECT * FROM unnest((SELECT $8::text[]), (SELECT $9::float8[])) AS w(schema_name, weight)
),` + lone + `
shares AS (
    SELECT tn.execution_mode, tn.task_type, tn.schema_name, tn.n AS tenant_n, ` + share + ` AS share
    FROM tenants tn
    JOIN slots sl ON sl.execution_mode = tn.execution_mode AND sl.task_type = tn.task_type
    LEFT JOIN weights w ON w.schema_name = tn.schema_name` + shareJoins + `
    WHERE tn.schema_name IS NOT NULL
      AND (tn.n > sl.fair_skip
           OR NOT EXISTS (SELECT 1 FROM tenants x
                          WHERE x.execution_mode = tn.execution_mode AND x.task_type = tn.task_type
                            AND x.n > sl.fair_skip AND x.schema_name IS NOT NULL))
      AND tn.schema_name <> ALL (ARRAY(SELECT p.name FROM tasks.pauses p WHERE p.kind = 'tenant'))` + shareWhere + `
),
fair AS (
    SELECT c.*, sh.tenant_n
    FROM shares sh
    CROSS JOIN LATERAL (
        SELECT ` + fairLockedColumns + `
        FROM tasks.tasks t
        WHERE t.status = 'PENDING'
          AND t.task_type = sh.task_type
          AND t.execution_mode = sh.execution_mode
          AND t.schema_name = sh.schema_name
          AND t.run_after <= ` + claimTimeSQL + `
        ORDER BY t.priority DESC, t.run_after, t.task_id
        LIMIT sh.share
        FOR UPDATE SKIP LOCKED
    ) c
),` + fullTenants(limited) + `
fill AS (
    SELECT c.*, NULL::int AS tenant_n
    FROM slots s
    CROSS JOIN LATERAL (
        SELECT ` + fairLockedColumns + `
        ` + dueOfSlotSQL + `
          AND t.task_id <> ALL (ARRAY(SELECT f.task_id FROM fair f))` + fillWhere + `
        ` + claimOrderSQL + `
        LIMIT greatest(s.max_claim - (SELECT count(*) FROM fair f
                                      WHERE f.task_type = s.task_type AND f.execution_mode = s.execution_mode
                                        AND f.priority >= (SELECT CASE
            WHEN s.fair_skip > 0 OR (SELECT count(*) FROM tenants tn
                  WHERE tn.execution_mode = s.execution_mode AND tn.task_type = s.task_type
                    AND tn.schema_name IS NOT NULL) >= s.max_claim
            THEN (SELECT t.priority ` + dueOfSlotSQL + ` ` + claimOrderSQL + ` LIMIT 1)
            ELSE (SELECT max(g.priority) FROM fair g
                  WHERE g.task_type = s.task_type AND g.execution_mode = s.execution_mode)
            END)), 0)
        FOR UPDATE SKIP LOCKED
    ) c
),
firsts AS (
    SELECT f.execution_mode, f.task_type, min(f.tenant_n) AS tenant_n
    FROM fair f
    GROUP BY f.execution_mode, f.task_type
),
ranked AS (
    SELECT u.*, (row_number() OVER (PARTITION BY u.execution_mode, u.task_type, u.schema_name, u.priority
                                    ORDER BY u.priority DESC, u.run_after, u.task_id) - 1)::float8 / coalesce(w.weight, 1)
                + CASE WHEN u.tenant_n = fi.tenant_n THEN least(1, 1 / coalesce(w.weight, 1))
                       ELSE 1 / coalesce(w.weight, 1) END AS turn
    FROM (SELECT * FROM fair UNION ALL SELECT * FROM fill) u
    LEFT JOIN weights w ON w.schema_name = u.schema_name
    LEFT JOIN firsts fi ON fi.execution_mode = u.execution_mode AND fi.task_type = u.task_type
),` + withinRooms(limited) + `
per_pair AS (
    SELECT r.*, row_number() OVER (PARTITION BY r.execution_mode, r.task_type
                                   ORDER BY ` + fairBatchOrder("r") + `) AS nth
    FROM ` + ranked + ` r
),
candidates AS (` + fairCandidates(limited) + `
),
marks AS (
    SELECT x.execution_mode, x.task_type, x.tenant_n, bool_or(x.taken) AS served
    FROM (SELECT f.execution_mode, f.task_type, f.tenant_n, false AS taken FROM fair f
          UNION ALL
          SELECT c.execution_mode, c.task_type, c.tenant_n, true FROM candidates c WHERE c.tenant_n IS NOT NULL) x
    GROUP BY x.execution_mode, x.task_type, x.tenant_n
),
scan_ends AS (
    SELECT m.execution_mode, m.task_type,
           CASE WHEN min(m.tenant_n) FILTER (WHERE NOT m.served) > min(m.tenant_n)
                THEN min(m.tenant_n) FILTER (WHERE NOT m.served) - 1
                ELSE max(m.tenant_n) FILTER (WHERE m.served) END AS end_n,
           min(m.tenant_n) FILTER (WHERE NOT m.served) > min(m.tenant_n)
               OR max(m.tenant_n) FILTER (WHERE NOT m.served) > max(m.tenant_n) FILTER (WHERE m.served) AS left_out
    FROM marks m
    GROUP BY m.execution_mode, m.task_type
),
census AS (
    SELECT tn.execution_mode, tn.task_type, bool_or(tn.schema_name IS NULL) AS ran_out,
           coalesce((array_agg(tn.schema_name) FILTER (WHERE tn.n = se.end_n))[1],
                    (array_agg(tn.schema_name ORDER BY tn.n DESC) FILTER (WHERE tn.schema_name IS NOT NULL))[1]) AS scan_end,
           coalesce(bool_or(se.left_out), false) AS left_out
    FROM tenants tn
    LEFT JOIN scan_ends se ON se.execution_mode = tn.execution_mode AND se.task_type = tn.task_type
    GROUP BY tn.execution_mode, tn.task_type
),
one_tenant AS (
    SELECT CASE WHEN (SELECT bool_and(ce.ran_out) FROM census ce) THEN
               (SELECT min(tn.schema_name) FROM tenants tn HAVING count(DISTINCT tn.schema_name) = 1)
           END AS one
)`
}

// fairCandidates is the body of a fair claim's candidates CTE: the batch,
// at most max_claim per pair and $5 in all, in fairBatchOrder. A limited
// claim always ranks (per_pair). An unlimited one ranks only when its scans
// of the tenants found more than one tenant, or tenants in more than one
// pair, or stopped at a batch's room (lone): with one tenant in one pair,
// all of whose tenants were found, every locked task (its share and the
// fill) is that tenant's, so each task's turn (its rank among the tenant's
// tasks of its priority) grows with its age and fairBatchOrder is the
// claim order, priority then oldest first. The batch is then the first of
// the locked tasks in that order, up to the pair's max_claim and $5: what
// ranking would take, without its sorts and window functions (about 40% of
// a fair claim's cost with one tenant, the burn-down's case). Each branch
// runs only under its one-time filter, so the other's CTEs are never read.
func fairCandidates(limited bool) string {
	ranked := `
    SELECT p.task_id, p."timestamp", p.execution_mode, p.task_type, p.schema_name, p.tenant_n
    FROM per_pair p
    JOIN slots s ON s.task_type = p.task_type AND s.execution_mode = p.execution_mode
    WHERE p.nth <= s.max_claim%s
    ORDER BY ` + fairBatchOrder("p") + `
    LIMIT (SELECT $5::int)`
	if limited {
		return fmt.Sprintf(ranked, "")
	}
	return `
    (` + fmt.Sprintf(ranked, `
      AND NOT (SELECT l.one FROM lone l)`) + `)
    UNION ALL
    (SELECT u.task_id, u."timestamp", u.execution_mode, u.task_type, u.schema_name, u.tenant_n
     FROM (SELECT * FROM fair UNION ALL SELECT * FROM fill) u
     WHERE (SELECT l.one FROM lone l)
     ORDER BY u.priority DESC, u.run_after, u.task_id
     LIMIT least((SELECT $5::int), (SELECT tn.max_claim FROM tenants tn WHERE tn.schema_name IS NOT NULL LIMIT 1)))`
}

// loneSQL is, in an unlimited fair claim, the CTE that tells whether the
// scans of the tenants found one tenant in one pair and every pair's scan
// ran out (a pair's recursion ends in a row without a tenant then, see
// tenants): the batch needs no ranking (fairCandidates).
const loneSQL = `
lone AS (
    SELECT count(*) FILTER (WHERE tn.schema_name IS NOT NULL) = 1
           AND count(*) FILTER (WHERE tn.schema_name IS NULL) = (SELECT count(*) FROM slots) AS one
    FROM tenants tn
),`

// The probes of the loose index scan of the tenants (r is a row of slots
// or of tenants, with the pair's fair_after): the last tenant below
// fair_after (where the scan begins), the last tenant from fair_after on
// (where it goes on once the tenants below are done: it wraps), and the
// next one, below the tenant just found and, once wrapped, from fair_after
// on. Each is one descent of the index to the back of a range.
var (
	fairTenantBelowAfter = fmt.Sprintf(fairTenantProbe, "\n          AND t.schema_name < r.fair_after")
	fairTopTenant        = fmt.Sprintf(fairTenantProbe, "\n          AND t.schema_name >= r.fair_after")
	fairNextTenant       = fmt.Sprintf(fairTenantProbe, `
          AND t.schema_name < r.schema_name
          AND t.schema_name >= CASE WHEN r.wrapped THEN r.fair_after ELSE '' END`)
)

// claimFairSQL is claimTasksSQL with fairness across tenants: see the top
// of this file.
var claimFairSQL = `
WITH RECURSIVE slots AS (
    SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::int[]), (SELECT $4::float8[]),
                         (SELECT $10::text[]), (SELECT $11::int[]))
        AS s(execution_mode, task_type, max_claim, lease_seconds, fair_after, fair_skip)
    WHERE ` + pausedTypesSQL + `
),` + fairCTEs(false) + claimUpdateSQL + `
RETURNING ` + taskColumnsT + `, ` + fairCensusColumns("t")

// fairCensusColumns are the last columns of a fair claim's rows: the
// tenant whose PENDING tasks alone the claim's pairs had (NULL unless every pair's
// loose scan of the tenants ran out, rather than stopping at the batch's
// room: with max_claim 1 it stops after the first tenant and cannot tell,
// and they found one tenant between them: a claim without fairness would
// take the same tasks), once for the claim; and, for the pair of the
// claimed task in alias a, where its next fair claim resumes
// (ClaimSlot.FairAfter): the tenant before the first one the batch left
// out while it served tenants after it, else the last tenant in scan order
// the batch served from its share, else the last one the scan visited
// (census's scan_end); and whether the batch left out tenants after it
// whose shares it had locked (Claimed.LeftOut).
func fairCensusColumns(a string) string {
	pair := `WHERE ce.execution_mode = ` + a + `.execution_mode AND ce.task_type = ` + a + `.task_type`
	return `(SELECT o.one FROM one_tenant o),
       (SELECT ce.scan_end FROM census ce ` + pair + `),
       (SELECT ce.left_out FROM census ce ` + pair + `)`
}

// fairBatchOrder is the order in which a fair claim's batch takes the
// locked tasks (of alias a): highest priority, then each tenant's turn
// (its k-th task at k ÷ its weight; the first tenant's first at 1 at the
// latest, see ranked), then, among equal turns, the tenants in the order
// the scan found them (the fill's tasks last): among equal turns the
// tenants a batch leaves out are then the last ones of the scan, where the
// next claim resumes (census's scan_end, which also resumes at a tenant
// left out before tenants served after it); then oldest.
func fairBatchOrder(a string) string {
	return a + `.priority DESC, ` + a + `.turn, ` + a + `.tenant_n NULLS LAST, ` + a + `.run_after, ` + a + `.task_id`
}

// addCensus records in c the census columns (fairCensusColumns) of its
// claimed task t: the claim's one tenant (the same on every row), the
// pair's scan end and whether the batch left tenants out after it.
func addCensus(c *Claimed, t *wftype.Task, one, scanEnd *string, leftOut *bool) {
	if one != nil {
		c.OneTenant = *one
	}
	p := Pair{Mode: t.ExecutionMode, TaskType: t.TaskType}
	if scanEnd != nil {
		if c.ScanEnd == nil {
			c.ScanEnd = map[Pair]string{}
		}
		c.ScanEnd[p] = *scanEnd
	}
	if leftOut != nil && *leftOut {
		if c.LeftOut == nil {
			c.LeftOut = map[Pair]bool{}
		}
		c.LeftOut[p] = true
	}
}

// claimFair claims with claimFairSQL, at most total tasks; the claim's
// OneTenant, ScanEnd and LeftOut come from its census columns.
func (s *Store) claimFair(ctx context.Context, args []any, total int) (Claimed, error) {
	var c Claimed
	err := s.withPlanGuard(ctx, func(db DBTX) (int, error) {
		c = Claimed{Tasks: make([]wftype.Task, 0, total)}
		var one, scanEnd *string
		var leftOut *bool
		sc := newTaskScanner(&one, &scanEnd, &leftOut)
		err := queryEach(ctx, db, "claiming tasks fairly", claimFairSQL, func(row pgx.Row) error {
			t, err := sc.scan(row)
			if err == nil {
				c.Tasks = append(c.Tasks, t)
				addCensus(&c, &c.Tasks[len(c.Tasks)-1], one, scanEnd, leftOut)
			}
			return err
		}, args...)
		return len(c.Tasks), err
	})
	return c, err
}

// ClaimFairSQL returns the fair claim statement, for EXPLAIN in tests.
func ClaimFairSQL() string { return claimFairSQL }

// fairArgs returns the fair statements' arguments after claimArgs': the
// tenants that have a weight and their weights ($8, $9), and each claimed
// pair's FairAfter ($10, in the order of claimArgs' pairs). fairSkips are
// their FairSkip, the last argument of each fair statement.
func fairArgs(p ClaimParams, f *Fairness) []any {
	names := make([]string, 0, len(f.Weights))
	weights := make([]float64, 0, len(f.Weights))
	for n, w := range f.Weights {
		names = append(names, n)
		weights = append(weights, w)
	}
	var after []string
	for _, sl := range claimable(p) {
		after = append(after, sl.FairAfter)
	}
	return []any{names, weights, after}
}

// fairSkips returns each claimed pair's FairSkip, in the order of
// claimArgs' pairs (see fairArgs).
func fairSkips(p ClaimParams) []int32 {
	var skips []int32
	for _, sl := range claimable(p) {
		skips = append(skips, int32(max(sl.FairSkip, 0)))
	}
	return skips
}
