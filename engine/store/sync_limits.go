package store

import (
	"context"
)

// syncStartSQL decides whether a SYNCHRONOUS run of a task of one type
// ($1…$6 as limitedArgs gives them, for that type) and tenant ($7) may
// start now under its type's limits, and counts the start into the type's
// rate windows when it may. Run after globalLockSQL, in the transaction
// that inserts and claims the task (which is not ACTIVE yet, so not
// counted): claims of the type wait for that transaction, and it for them.
// It returns the first limit without room (heldReasonSQL), NULL when the run
// may start.
var syncStartSQL = `
WITH` + limitsCTEs(1, "NULL") + `
verdict AS MATERIALIZED (
    SELECT l.*, ` + heldReasonSQL + ` AS reason
    FROM limits l
    LEFT JOIN active a ON a.task_type = l.task_type AND a.schema_name = $7
    LEFT JOIN started s ON s.task_type = l.task_type AND s.schema_name = $7
),
counted AS (
    INSERT INTO tasks.rate_windows AS w (task_type, schema_name, window_start, window_seconds, starts)
    SELECT v.task_type, k.schema_name, v.window_start, v.rate_seconds, 1
    FROM verdict v
    CROSS JOIN LATERAL (
        SELECT ''::varchar AS schema_name WHERE v.type_rate > 0
        UNION ALL
        SELECT $7::varchar WHERE v.tenant_rate > 0
    ) k
    WHERE v.rate_seconds > 0 AND v.reason IS NULL
    ` + countStartsSQL + `
)
SELECT reason FROM verdict`

// StartSync takes, for a SYNCHRONOUS run of a task of taskType by tenant
// about to start, the room of the type's limits (concurrency.global and
// per_tenant, rate_limit), as a claim does: under the type's lock, in the
// caller's transaction (InTx), which then claims the task (ClaimSyncTask).
// It returns the reason of the first limit without room (HeldGlobal,
// HeldPerTenant, HeldRate; the caller refuses the run and rolls back), or
// "" after counting the start into the type's rate windows.
func (s *Store) StartSync(ctx context.Context, taskType, tenant string, lim TypeLimits) (string, error) {
	if !lim.limited() {
		return "", nil
	}
	if _, err := s.db.Exec(ctx, globalLockSQL, []string{taskType}); err != nil {
		return "", wrap("locking the limits of "+taskType, err)
	}
	var reason *string
	args := append(limitedArgs([]string{taskType}, []TypeLimits{lim}), tenant)
	if err := s.db.QueryRow(ctx, syncStartSQL, args...).Scan(&reason); err != nil {
		return "", wrap("checking the limits of "+taskType, err)
	}
	if reason == nil {
		return "", nil
	}
	return *reason, nil
}
