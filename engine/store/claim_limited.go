package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Limits declared in task type specs, enforced at claim time across every
// instance: concurrency.global (at most N of the type ACTIVE),
// concurrency.per_tenant (at most N of one tenant ACTIVE) and rate_limit (at
// most N starts per window, of the type and of each tenant). They are exact
// the way global caps always were (claim_capped.go): a claim that includes a
// limited type first takes the type's transaction-scoped advisory lock, then
// counts and claims in the same transaction, so claimers of one limited
// type take turns and each sees every claim committed before it. The rate
// windows' counts (tasks.rate_windows) are written by the claim statement
// itself, under that lock. A task held back by a limit stays PENDING: it is
// not a failure and counts no attempt; the next claim after room appears
// (a run of the type ends, a new window opens) takes it.

// TypeLimits are the claim-time limits of one task type; zero fields are
// no limit.
type TypeLimits struct {
	// Global caps the type's ACTIVE tasks, all tenants together.
	Global int
	// PerTenant caps the type's ACTIVE tasks of each tenant.
	PerTenant int
	// RateStarts caps the type's starts per RateInterval, all tenants
	// together; RatePerTenant each tenant's.
	RateStarts, RatePerTenant int
	// RateInterval is the rate window, a whole number of seconds; windows
	// are aligned to multiples of it since the Unix epoch.
	RateInterval time.Duration
}

// limited reports whether l limits anything.
func (l TypeLimits) limited() bool {
	return l.Global > 0 || l.PerTenant > 0 || (l.RateInterval > 0 && (l.RateStarts > 0 || l.RatePerTenant > 0))
}

// onlyGlobal reports whether l is a global cap and nothing else.
func (l TypeLimits) onlyGlobal() bool { return l == TypeLimits{Global: l.Global} }

// tenantRoomSQL is how many more tasks the tenant of row tn (or u, r) may
// start now by its type's per-tenant limits, NULL when the type has none: the
// room found in tenant_room, else (a tenant with nothing ACTIVE and no start
// in the window) the whole of the limits. It needs limits l and tenant_room
// tr joined on the row's type and tenant.
const tenantRoomSQL = `coalesce(tr.room, l.fresh_room)`

// limitsCTEs are the first common table expressions of a limited claim
// (and of heldSQL): the limits of its limited types, six arrays from
// parameter $first on (limitedArgs), with the current rate window of each
// at the time parameter now (NULL: the database's clock when the statement
// began, as claimTimeSQL), the ACTIVE tasks
// of capped types by tenant, and the starts in the current windows: a row
// of tasks.rate_windows counts only when it is the window that holds now
// and of the type's interval (a row of no recorded length counts as one of
// the type's interval, as in sameWindowLengthSQL).
func limitsCTEs(first int, now string) string {
	p := func(i int) string { return fmt.Sprintf("$%d", first+i) }
	return `
limits AS MATERIALIZED (
    SELECT l.*,
           least(CASE WHEN l.tenant_cap > 0 THEN l.tenant_cap END,
                 CASE WHEN l.tenant_rate > 0 THEN l.tenant_rate END) AS fresh_room,
           CASE WHEN l.rate_seconds > 0 THEN
               to_timestamp(floor(extract(epoch FROM coalesce(` + now + `::timestamptz, statement_timestamp())) / l.rate_seconds) * l.rate_seconds)
           END AS window_start
    FROM unnest((SELECT ` + p(0) + `::text[]), (SELECT ` + p(1) + `::int[]), (SELECT ` + p(2) + `::int[]),
                (SELECT ` + p(3) + `::int[]), (SELECT ` + p(4) + `::int[]), (SELECT ` + p(5) + `::float8[]))
        AS l(task_type, global_cap, tenant_cap, type_rate, tenant_rate, rate_seconds)
),
active AS MATERIALIZED (
    SELECT a.task_type, a.schema_name, count(*)::int AS n
    FROM tasks.tasks a
    WHERE a.status = 'ACTIVE'
      AND a.task_type = ANY (ARRAY(SELECT l.task_type FROM limits l WHERE l.global_cap > 0 OR l.tenant_cap > 0))
    GROUP BY a.task_type, a.schema_name
),
started AS MATERIALIZED (
    SELECT w.task_type, w.schema_name, w.starts
    FROM tasks.rate_windows w
    JOIN limits l ON l.task_type = w.task_type AND w.window_start = l.window_start
                 AND coalesce(w.window_seconds, l.rate_seconds) = l.rate_seconds
),`
}

// limitedCTEs come first in a limited claim ($11…$16 the limits, $6 the
// time): limitsCTEs, then the room each type and each tenant seen there
// has left.
var limitedCTEs = limitsCTEs(11, "$6") + `
type_room AS MATERIALIZED (
    SELECT l.task_type, least(
        CASE WHEN l.global_cap > 0 THEN
            l.global_cap - coalesce((SELECT sum(a.n) FROM active a WHERE a.task_type = l.task_type), 0)::int END,
        CASE WHEN l.type_rate > 0 THEN
            l.type_rate - coalesce((SELECT s.starts FROM started s WHERE s.task_type = l.task_type AND s.schema_name = ''), 0) END
    ) AS room
    FROM limits l
),
tenant_room AS MATERIALIZED (
    SELECT l.task_type, u.schema_name, least(
        CASE WHEN l.tenant_cap > 0 THEN l.tenant_cap - coalesce(a.n, 0) END,
        CASE WHEN l.tenant_rate > 0 THEN l.tenant_rate - coalesce(s.starts, 0) END
    ) AS room
    FROM limits l
    JOIN (SELECT task_type, schema_name FROM active
          UNION SELECT task_type, schema_name FROM started WHERE schema_name <> '') u ON u.task_type = l.task_type
    LEFT JOIN active a ON a.task_type = u.task_type AND a.schema_name = u.schema_name
    LEFT JOIN started s ON s.task_type = u.task_type AND s.schema_name = u.schema_name
    WHERE l.tenant_cap > 0 OR l.tenant_rate > 0
),`

// fullTenants is, in a limited claim, the CTE of the tenants whose room the
// fair shares used up: the fill leaves their tasks alone.
func fullTenants(limited bool) string {
	if !limited {
		return ""
	}
	return `
full_tenants AS (
    SELECT u.task_type, u.schema_name
    FROM (SELECT task_type, schema_name FROM tenant_room UNION SELECT task_type, schema_name FROM fair) u
    JOIN limits l ON l.task_type = u.task_type
    LEFT JOIN tenant_room tr ON tr.task_type = u.task_type AND tr.schema_name = u.schema_name
    WHERE ` + tenantRoomSQL + ` - (SELECT count(*) FROM fair f
                                   WHERE f.task_type = u.task_type AND f.schema_name = u.schema_name) <= 0
),`
}

// withinRooms is, in a limited claim, the CTEs that keep the ranked
// candidates within each tenant's room (allowed), then each type's (typed:
// a type's two execution modes share it), in the batch's order.
func withinRooms(limited bool) string {
	if !limited {
		return ""
	}
	return `
allowed AS (
    SELECT r.*
    FROM (
        SELECT r.*, row_number() OVER (PARTITION BY r.task_type, r.schema_name
                                       ORDER BY ` + fairBatchOrder("r") + `) AS nth_tenant
        FROM ranked r
    ) r
    LEFT JOIN limits l ON l.task_type = r.task_type
    LEFT JOIN tenant_room tr ON tr.task_type = r.task_type AND tr.schema_name = r.schema_name
    WHERE ` + tenantRoomSQL + ` IS NULL OR r.nth_tenant <= ` + tenantRoomSQL + `
),
typed AS (
    SELECT a.task_id, a."timestamp", a.task_type, a.execution_mode, a.schema_name, a.priority, a.run_after, a.turn, a.tenant_n
    FROM (
        SELECT a.*, row_number() OVER (PARTITION BY a.task_type ORDER BY ` + fairBatchOrder("a") + `) AS nth_type
        FROM allowed a
    ) a
    LEFT JOIN type_room r ON r.task_type = a.task_type
    WHERE r.room IS NULL OR a.nth_type <= r.room
),`
}

// sameWindowLengthSQL, in countStartsSQL, holds when the row w of
// tasks.rate_windows counts windows of the length the claim counts in
// (excluded.window_seconds). A row written before the length was recorded
// (migration 029) has none and counts as the same length.
const sameWindowLengthSQL = `coalesce(w.window_seconds, excluded.window_seconds) = excluded.window_seconds`

// countStartsSQL ends the INSERT INTO tasks.rate_windows AS w of a claim's
// starts (task_type, schema_name, window_start, window_seconds, starts):
// they add to the row's count in the same window, and begin a newer
// window's count; a row keeps the newest window (a claim in an older one,
// which claimTimeSQL rules out on the database's clock, never moves it
// back). A row that counts windows of another length (a deploy changed the
// type's rate_limit interval) is no window of the claim's, older or newer:
// the claim begins its own window's count there. Its starts are not
// carried over (they were counted in a window that is not the claim's), so
// a change of interval may start up to one window's room more, once. A
// change of the counts alone keeps the window and its starts.
const countStartsSQL = `ON CONFLICT (task_type, schema_name) DO UPDATE
    SET starts = CASE WHEN NOT (` + sameWindowLengthSQL + `) THEN excluded.starts
                      WHEN w.window_start = excluded.window_start THEN w.starts + excluded.starts
                      WHEN w.window_start > excluded.window_start THEN w.starts
                      ELSE excluded.starts END,
        window_start = CASE WHEN NOT (` + sameWindowLengthSQL + `) THEN excluded.window_start
                            ELSE greatest(w.window_start, excluded.window_start) END,
        window_seconds = excluded.window_seconds`

// claimLimitedSQL is the fair claim for a batch that includes limited types
// (see the top of this file). slots cut each pair's max_claim to its type's
// room; the claimed rows are counted into their rate windows
// (countStartsSQL); each row
// carries its type's room (NULL when the type has none but per-tenant
// limits) after the task's columns, as claimCappedSQL's do.
var claimLimitedSQL = `
WITH RECURSIVE` + limitedCTEs + `
slots AS (
    SELECT s.execution_mode, s.task_type,
           least(s.max_claim, greatest(coalesce(r.room, s.max_claim), 0)) AS max_claim, s.lease_seconds, s.fair_after,
           s.fair_skip
    FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::int[]), (SELECT $4::float8[]),
                (SELECT $10::text[]), (SELECT $17::int[]))
        AS s(execution_mode, task_type, max_claim, lease_seconds, fair_after, fair_skip)
    LEFT JOIN type_room r ON r.task_type = s.task_type
    WHERE ` + pausedTypesSQL + `
),` + fairCTEs(true) + `,
claimed AS (` + claimUpdateSQL + `
    RETURNING ` + taskColumnsT + `
),
counted AS (
    INSERT INTO tasks.rate_windows AS w (task_type, schema_name, window_start, window_seconds, starts)
    SELECT c.task_type, k.schema_name, l.window_start, l.rate_seconds, count(*)::int
    FROM claimed c
    JOIN limits l ON l.task_type = c.task_type AND l.rate_seconds > 0
    CROSS JOIN LATERAL (
        SELECT ''::varchar AS schema_name WHERE l.type_rate > 0
        UNION ALL
        SELECT c.schema_name WHERE l.tenant_rate > 0
    ) k
    GROUP BY c.task_type, k.schema_name, l.window_start, l.rate_seconds
    ` + countStartsSQL + `
)
SELECT c.*, (SELECT r.room FROM type_room r WHERE r.task_type = c.task_type),
       ` + fairCensusColumns("c") + `
FROM claimed c`

// ClaimLimitedSQL returns the statements of a limited claim, the lock then
// the claim, for EXPLAIN in tests.
func ClaimLimitedSQL() (lock, claim string) { return globalLockSQL, claimLimitedSQL }

// limitsOf returns, sorted by type, the limited task types p may claim and
// their limits: p.Limits, with p.Global's caps merged in.
func limitsOf(p ClaimParams) ([]string, []TypeLimits) {
	type limited struct {
		taskType string
		limits   TypeLimits
	}
	var all []limited
	for _, sl := range p.Slots {
		if sl.Max <= 0 || slices.ContainsFunc(all, func(l limited) bool { return l.taskType == sl.TaskType }) {
			continue
		}
		l := p.Limits[sl.TaskType]
		l.Global = max(l.Global, p.Global[sl.TaskType])
		if l.limited() {
			all = append(all, limited{sl.TaskType, l})
		}
	}
	slices.SortFunc(all, func(a, b limited) int { return strings.Compare(a.taskType, b.taskType) })
	types, lims := make([]string, len(all)), make([]TypeLimits, len(all))
	for i, l := range all {
		types[i], lims[i] = l.taskType, l.limits
	}
	return types, lims
}

// limitedArgs returns the limited statement's arguments after the fair
// ones ($11…$16).
func limitedArgs(types []string, lims []TypeLimits) []any {
	global := make([]int32, len(lims))
	tenant := make([]int32, len(lims))
	typeRate := make([]int32, len(lims))
	tenantRate := make([]int32, len(lims))
	seconds := make([]float64, len(lims))
	for i, l := range lims {
		global[i], tenant[i] = int32(l.Global), int32(l.PerTenant)
		if l.RateInterval > 0 {
			typeRate[i], tenantRate[i], seconds[i] = int32(l.RateStarts), int32(l.RatePerTenant), l.RateInterval.Seconds()
		}
	}
	return []any{types, global, tenant, typeRate, tenantRate, seconds}
}

// claimLimited takes the advisory locks of the limited types and claims
// with claimLimitedSQL, in one round trip and one transaction.
func (s *Store) claimLimited(ctx context.Context, p ClaimParams, args []any, types []string, lims []TypeLimits) (Claimed, error) {
	fair := p.Fair
	if fair == nil {
		fair = &Fairness{}
	}
	args = append(append(append(args, fairArgs(p, fair)...), limitedArgs(types, lims)...), fairSkips(p))
	return s.claimLocked(ctx, "claiming tasks under limits", claimLimitedSQL, types, true, args...)
}

// Held is a count of due PENDING tasks that no claim may take now because
// of a limit of their type (TypeLimits), by the reason that holds them.
type Held struct {
	TaskType   string
	SchemaName string
	// Reason is concurrency_global, concurrency_per_tenant or rate_limit
	// (the first that applies, in that order).
	Reason string
	Count  int64
}

// Reasons a task is held (Held.Reason).
const (
	HeldGlobal    = "concurrency_global"
	HeldPerTenant = "concurrency_per_tenant"
	HeldRate      = "rate_limit"
)

// heldReasonSQL is the first limit (Held.Reason) that leaves a tenant of a
// type no room now, NULL when none does: of limits l, with the tenant's
// rows of active a and started s joined (LEFT) on the type and tenant.
const heldReasonSQL = `CASE
        WHEN l.global_cap > 0 AND l.global_cap <= coalesce((SELECT sum(ta.n) FROM active ta WHERE ta.task_type = l.task_type), 0) THEN '` + HeldGlobal + `'
        WHEN l.tenant_cap > 0 AND l.tenant_cap <= coalesce(a.n, 0) THEN '` + HeldPerTenant + `'
        WHEN l.type_rate > 0 AND l.type_rate <= coalesce((SELECT ts.starts FROM started ts WHERE ts.task_type = l.task_type AND ts.schema_name = ''), 0) THEN '` + HeldRate + `'
        WHEN l.tenant_rate > 0 AND l.tenant_rate <= coalesce(s.starts, 0) THEN '` + HeldRate + `'
    END`

// heldSQL counts the due PENDING tasks, by type and tenant, of the limited
// types ($1…$6, as limitedArgs gives them) whose type or tenant has no room
// left now. The due tasks are counted from a partial index on PENDING rows
// (both include the tenant).
var heldSQL = `
WITH` + limitsCTEs(1, "NULL") + `
due AS (
    SELECT t.task_type, t.schema_name, count(*) AS n
    FROM tasks.tasks t
    WHERE t.status = 'PENDING' AND t.run_after <= now()
      AND t.task_type = ANY (ARRAY(SELECT l.task_type FROM limits l))
    GROUP BY t.task_type, t.schema_name
)
SELECT d.task_type, d.schema_name, ` + heldReasonSQL + ` AS reason, d.n
FROM due d
JOIN limits l ON l.task_type = d.task_type
LEFT JOIN active a ON a.task_type = d.task_type AND a.schema_name = d.schema_name
LEFT JOIN started s ON s.task_type = d.task_type AND s.schema_name = d.schema_name`

// HeldTasks counts the due tasks that limits hold back now, by type, tenant
// and reason (metrics: wf_tasks_held). Types without limits are left out.
func (s *Store) HeldTasks(ctx context.Context, limits map[string]TypeLimits) ([]Held, error) {
	var types []string
	var lims []TypeLimits
	for tt, l := range limits {
		if l.limited() {
			types, lims = append(types, tt), append(lims, l)
		}
	}
	if len(types) == 0 {
		return nil, nil
	}
	rows, err := queryAll(ctx, s.db, "counting held tasks", heldSQL, func(row pgx.Row) (Held, error) {
		var h Held
		var reason *string
		err := row.Scan(&h.TaskType, &h.SchemaName, &reason, &h.Count)
		if reason != nil {
			h.Reason = *reason
		}
		return h, err
	}, limitedArgs(types, lims)...)
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, h := range rows {
		if h.Reason != "" {
			out = append(out, h)
		}
	}
	return out, nil
}
