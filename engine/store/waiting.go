package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// Why a PENDING task waits (WaitingReasons), besides the limits' reasons
// HeldGlobal, HeldPerTenant and HeldRate.
const (
	// WaitingNotDue: its run_after is still ahead (a delayed enqueue, a
	// retry's backoff, a snooze).
	WaitingNotDue = "not_due"
	// WaitingPaused: its task type or its tenant is paused.
	WaitingPaused = "paused"
	// WaitingNotServed: no live instance serves its task type (none has it
	// in its specs: see served.go); it waits for one that does to start,
	// or for the specs to be reloaded.
	WaitingNotServed = "not_served"
)

// waitingSQL says why each given PENDING task ($1 ids, $2 types, $3
// tenants, $4 run_after) waits, in one statement whatever the number of
// tasks: not due yet, paused (tasks.pauses, a primary-key probe per kind),
// or held by a limit of its type ($5…$10, as limitedArgs gives them; the
// same counts the claim reads: ACTIVE tasks of the capped types from the
// lease index, the current rate windows), else NULL (it waits for a free
// slot, or is about to be claimed), else not served by any live instance
// (notServedSQL: last, since a limit holds the task whoever serves it).
// The first that applies, in that order.
// Due and the current rate windows are reckoned at $11, the caller's
// clock as its claims read it (ClaimParams.Now; NULL: the database's now()).
var waitingSQL = `
WITH` + limitsCTEs(5, "$11") + `
input AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[]) AS i(task_id, task_type, schema_name, run_after)
)
SELECT i.task_id, CASE
        WHEN i.run_after > coalesce($11::timestamptz, now()) THEN '` + WaitingNotDue + `'
        WHEN EXISTS (SELECT 1 FROM tasks.pauses p WHERE p.kind = 'task_type' AND p.name = i.task_type)
          OR EXISTS (SELECT 1 FROM tasks.pauses p WHERE p.kind = 'tenant' AND p.name = i.schema_name) THEN '` + WaitingPaused + `'
        WHEN l.global_cap > 0 AND l.global_cap <= coalesce((SELECT sum(a.n) FROM active a WHERE a.task_type = i.task_type), 0) THEN '` + HeldGlobal + `'
        WHEN l.tenant_cap > 0 AND l.tenant_cap <= coalesce(a.n, 0) THEN '` + HeldPerTenant + `'
        WHEN l.type_rate > 0 AND l.type_rate <= coalesce((SELECT s.starts FROM started s WHERE s.task_type = i.task_type AND s.schema_name = ''), 0) THEN '` + HeldRate + `'
        WHEN l.tenant_rate > 0 AND l.tenant_rate <= coalesce(s.starts, 0) THEN '` + HeldRate + `'
        WHEN ` + notServedSQL("i.task_type") + ` THEN '` + WaitingNotServed + `'
    END
FROM input i
LEFT JOIN limits l ON l.task_type = i.task_type
LEFT JOIN active a ON a.task_type = i.task_type AND a.schema_name = i.schema_name
LEFT JOIN started s ON s.task_type = i.task_type AND s.schema_name = i.schema_name`

// WaitingReasons says why each PENDING task of tasks waits (see
// waitingSQL): WaitingNotDue, WaitingPaused, WaitingNotServed, HeldGlobal, HeldPerTenant or
// HeldRate, by task id; a PENDING task that only waits its turn, and any
// task not PENDING, is absent. limits are the task types' claim-time
// limits; now is the caller's clock as its claims read it
// (clock.Clock.DBNow(); nil: the database's). One statement for the whole
// list, none when no task is PENDING.
func (s *Store) WaitingReasons(ctx context.Context, tasks []wftype.Task, limits map[string]TypeLimits, now *time.Time) (map[uuid.UUID]string, error) {
	var (
		ids           []uuid.UUID
		types, owners []string
		due           []time.Time
	)
	for _, t := range tasks {
		if t.Status == wftype.StatusPending {
			ids, types, owners, due = append(ids, t.ID), append(types, t.TaskType), append(owners, t.SchemaName), append(due, t.RunAfter)
		}
	}
	if len(ids) == 0 {
		return map[uuid.UUID]string{}, nil
	}
	var ltypes []string
	var lims []TypeLimits
	for tt, l := range limits {
		if l.limited() {
			ltypes, lims = append(ltypes, tt), append(lims, l)
		}
	}
	if ltypes == nil {
		ltypes = []string{}
	}
	type row struct {
		id     uuid.UUID
		reason *string
	}
	args := append([]any{ids, types, owners, due}, limitedArgs(ltypes, lims)...)
	args = append(args, now)
	rows, err := queryAll(ctx, s.db, "reading why tasks wait", waitingSQL, func(r pgx.Row) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.reason)
	}, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]string, len(rows))
	for _, r := range rows {
		if r.reason != nil {
			out[r.id] = *r.reason
		}
	}
	return out, nil
}
