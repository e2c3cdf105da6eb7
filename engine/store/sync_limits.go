package store

import (
	"context"
	"time"
)

// syncStartSQL decides whether a run of a task of one type ($1…$6 as
// limitedArgs gives them, for that type) and tenant ($7), started outside
// the dispatcher's claim, may start at time $8 (NULL: the database's clock)
// under its type's limits, and counts the start into the type's rate
// windows when it may, or when it is forced ($9). Run after globalLockSQL,
// in the transaction that claims the task (which is not ACTIVE yet, so not
// counted): claims of the type wait for that transaction, and it for them.
// It returns the first limit without room (heldReasonSQL), NULL when the run
// may start, and for rate_limit the seconds left in the window.
var syncStartSQL = `
WITH` + limitsCTEs(1, "$8") + `
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
    WHERE v.rate_seconds > 0 AND (v.reason IS NULL OR $9::bool)
    ` + countStartsSQL + `
)
SELECT reason,
       CASE WHEN reason = '` + HeldRate + `' THEN
           v.rate_seconds - extract(epoch FROM coalesce($8::timestamptz, statement_timestamp()) - v.window_start)::float8
       END
FROM verdict v`

// SyncStart is a run about to start outside the dispatcher's claim (a
// SYNCHRONOUS run, wf exec), for StartSync.
type SyncStart struct {
	// TaskType and Tenant (schema_name) are the task's.
	TaskType, Tenant string
	// Limits are its type's.
	Limits TypeLimits
	// Now is the time of the start, which picks the rate window; nil is the
	// database's clock when the statement begins (clock.Clock.DBNow).
	Now *time.Time
	// Force starts the run whatever room the limits have (wf exec --force):
	// the start is counted all the same, so the claims that follow see it.
	Force bool
}

// SyncVerdict is StartSync's answer.
type SyncVerdict struct {
	// Held is the first limit without room (HeldGlobal, HeldPerTenant,
	// HeldRate), "" when the run may start. A forced run starts whatever it
	// says.
	Held string
	// RetryIn is, for HeldRate, the time left in the rate window that has
	// no room (a new window has room again); 0 for the other limits, whose
	// room comes back when a run ends.
	RetryIn time.Duration
}

// StartSync takes, for a run of a task of p.TaskType by p.Tenant about to
// start outside the dispatcher's claim (a SYNCHRONOUS run, wf exec), the
// room of the type's limits (concurrency.global and per_tenant,
// rate_limit), as a claim does: under the type's lock, in the caller's
// transaction (InTx), which then claims the task (ClaimSyncTask). Its
// verdict names the first limit without room (the caller refuses the run
// and rolls back) or none; a run it lets start, and a forced one, is
// counted into the type's rate windows.
func (s *Store) StartSync(ctx context.Context, p SyncStart) (SyncVerdict, error) {
	if !p.Limits.limited() {
		return SyncVerdict{}, nil
	}
	if _, err := s.db.Exec(ctx, globalLockSQL, []string{p.TaskType}); err != nil {
		return SyncVerdict{}, wrap("locking the limits of "+p.TaskType, err)
	}
	var reason *string
	var retryIn *float64
	args := append(limitedArgs([]string{p.TaskType}, []TypeLimits{p.Limits}), p.Tenant, p.Now, p.Force)
	if err := s.db.QueryRow(ctx, syncStartSQL, args...).Scan(&reason, &retryIn); err != nil {
		return SyncVerdict{}, wrap("checking the limits of "+p.TaskType, err)
	}
	var v SyncVerdict
	if reason != nil {
		v.Held = *reason
	}
	if retryIn != nil && *retryIn > 0 {
		v.RetryIn = time.Duration(*retryIn * float64(time.Second))
	}
	return v, nil
}
