package store

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/wftype"
)

// OverviewParams selects what an overview reads.
type OverviewParams struct {
	// SchemaNames limits the task counts, throughput and pending ages to
	// these tenants; nil means every tenant.
	SchemaNames []string
	// Window is how far back finished tasks are counted (COMPLETED, FAILED
	// and CANCELLED counts, and the throughput). Default one hour.
	Window time.Duration
	// Now is the overview's clock; nil means the database's.
	Now *time.Time
	// Timeout bounds every statement. Default 5s.
	Timeout time.Duration
	// PendingMaxAge is how old the PENDING counts snapshot may be before
	// this read refreshes it itself (the leader refreshes it every few
	// seconds). Default DefaultPendingSnapshotMaxAge.
	PendingMaxAge time.Duration
}

// TaskCount is how many tasks of one type and tenant are in one status.
type TaskCount struct {
	Status     wftype.TaskStatus `json:"status"`
	TaskType   string            `json:"task_type"`
	SchemaName string            `json:"schema_name"`
	Count      int64             `json:"count"`
}

// ThroughputBucket is how many tasks ended in one minute, by outcome.
type ThroughputBucket struct {
	Minute     time.Time `json:"minute"`
	Completed  int64     `json:"completed"`
	Failed     int64     `json:"failed"` // FAILED and DEAD_LETTER
	Cancelled  int64     `json:"cancelled"`
	DeadLetter int64     `json:"dead_letter"` // the DEAD_LETTER share of Failed
}

// PendingAge is the oldest due PENDING task of a type and tenant.
type PendingAge struct {
	TaskType    string    `json:"task_type"`
	SchemaName  string    `json:"schema_name"`
	Due         int64     `json:"due"`           // PENDING tasks whose run_after has passed
	OldestDueAt time.Time `json:"oldest_due_at"` // the earliest run_after among them
}

// Instance is one wf instance connected to the database, found by the
// application_name of its leader-election connection
// ("wf-leader:<service>:<owner>", wf run) or of its presence connection
// ("wf-serve:<service>:<owner>", wf serve: engine/presence).
type Instance struct {
	Service string `json:"service"`
	Owner   string `json:"owner"`
	// Role is "engine" (wf run: claims tasks, may lead) or "api" (wf serve).
	Role      string    `json:"role"`
	Leader    bool      `json:"leader"` // its election connection holds the service's advisory lock
	StartedAt time.Time `json:"started_at"`
	Address   string    `json:"address"`
}

// OutboxStats is the state of the events outbox.
type OutboxStats struct {
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	DeadLetter int64 `json:"dead_letter"`
	// Held counts the PENDING events that are not due yet: held because no
	// subscription matched them (events.unmatched_grace: a rolling deploy
	// may bring their subscriber) or waiting for a retry. They are part of
	// Pending, and not of OldestPending: a healthy outbox holds some.
	Held          int64      `json:"held"`
	OldestPending *time.Time `json:"oldest_pending_at,omitempty"` // created_at of the oldest due PENDING event
}

// Overview is what the dashboard's first page and `wf tasks stats` show.
type Overview struct {
	Now   time.Time `json:"now"`
	Since time.Time `json:"since"`
	// Counts hold every PENDING, ACTIVE and DEAD_LETTER task, and the
	// COMPLETED, FAILED and CANCELLED ones that finished since Since. The
	// PENDING counts are those of the snapshot taken at PendingAsOf.
	Counts []TaskCount `json:"counts"`
	// PendingAsOf is when the PENDING counts and OldestPending were taken
	// (tasks.pending_snapshot): their freshness.
	PendingAsOf   time.Time          `json:"pending_as_of"`
	Throughput    []ThroughputBucket `json:"throughput"`
	OldestPending []PendingAge       `json:"oldest_pending"`
	Instances     []Instance         `json:"instances"`
	Outbox        OutboxStats        `json:"outbox"`
	// Estimates are the rows of tasks.tasks by status from the planner's
	// statistics (all history, no table read).
	Estimates map[wftype.TaskStatus]float64 `json:"estimates"`
	// Paused are the paused task types, and the paused tenants among those
	// the overview covers.
	Paused []Pause `json:"paused"`
}

// overviewCountsSQL counts the ACTIVE, DEAD_LETTER and recently finished
// tasks by status, type and tenant (the PENDING ones come from
// overviewPendingSQL). Every branch reads one partial index with its status
// as a literal so the planner can match the predicate: ACTIVE from
// tasks_active_lease_idx, DEAD_LETTER and the finished window from
// tasks_finished_idx (status, finished_at). Finished history older than
// the window is never read: its size shows as an estimate instead.
// $1 tenants (NULL: all), $2 window start.
const overviewCountsSQL = `
SELECT 'ACTIVE', task_type, schema_name, count(*) FROM tasks.tasks
WHERE status = 'ACTIVE' AND ($1::text[] IS NULL OR schema_name = ANY($1)) GROUP BY task_type, schema_name
UNION ALL
SELECT 'DEAD_LETTER', task_type, schema_name, count(*) FROM tasks.tasks
WHERE status = 'DEAD_LETTER' AND ($1::text[] IS NULL OR schema_name = ANY($1)) GROUP BY task_type, schema_name
UNION ALL
SELECT status, task_type, schema_name, count(*) FROM tasks.tasks
WHERE status IN ('COMPLETED', 'FAILED', 'CANCELLED') AND finished_at >= $2
  AND ($1::text[] IS NULL OR schema_name = ANY($1)) GROUP BY status, task_type, schema_name`

// overviewThroughputSQL buckets the tasks that ended in the window by minute
// and outcome. Each status is its own branch on tasks_finished_idx
// (status, finished_at): with the four statuses in one IN list, the planner
// drops the status condition as implied by the index's predicate and scans
// the whole index of a partition for the finished_at range (387 ms at 5M
// finished rows, against 21 ms this way). $1 tenants, $2 window start.
const overviewThroughputSQL = `
SELECT date_bin('1 minute', finished_at, $2::timestamptz) AS minute,
       count(*) FILTER (WHERE status = 'COMPLETED'),
       count(*) FILTER (WHERE status IN ('FAILED', 'DEAD_LETTER')),
       count(*) FILTER (WHERE status = 'CANCELLED'),
       count(*) FILTER (WHERE status = 'DEAD_LETTER')
FROM (SELECT status, finished_at FROM tasks.tasks
      WHERE status = 'COMPLETED' AND finished_at >= $2 AND ($1::text[] IS NULL OR schema_name = ANY($1))
      UNION ALL
      SELECT status, finished_at FROM tasks.tasks
      WHERE status = 'FAILED' AND finished_at >= $2 AND ($1::text[] IS NULL OR schema_name = ANY($1))
      UNION ALL
      SELECT status, finished_at FROM tasks.tasks
      WHERE status = 'DEAD_LETTER' AND finished_at >= $2 AND ($1::text[] IS NULL OR schema_name = ANY($1))
      UNION ALL
      SELECT status, finished_at FROM tasks.tasks
      WHERE status = 'CANCELLED' AND finished_at >= $2 AND ($1::text[] IS NULL OR schema_name = ANY($1))) f
GROUP BY 1 ORDER BY 1`

// overviewInstancesSQL lists the wf instances connected to this database by
// their election connections (wf run) and presence connections (wf serve),
// and which election connection holds an advisory lock (the leader lock is
// the only one an election connection takes).
const overviewInstancesSQL = `
SELECT a.application_name, a.backend_start, coalesce(host(a.client_addr), ''),
       a.application_name LIKE 'wf-leader:%'
       AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted)
FROM pg_stat_activity a
WHERE a.datname = current_database()
  AND (a.application_name LIKE 'wf-leader:%' OR a.application_name LIKE 'wf-serve:%')
ORDER BY a.application_name`

// overviewOutboxSQL counts the outbox by status from its partial indexes
// (consumed events are deleted, so the table holds only live and dead ones),
// the PENDING events not due yet (events_claim_idx, by run_after), and the
// creation of the oldest due one.
const overviewOutboxSQL = `
SELECT (SELECT count(*) FROM tasks.events WHERE status = 'PENDING'),
       (SELECT count(*) FROM tasks.events WHERE status = 'PROCESSING'),
       (SELECT count(*) FROM tasks.events WHERE status = 'DEAD_LETTER'),
       (SELECT count(*) FROM tasks.events WHERE status = 'PENDING' AND run_after > now()),
       (SELECT min(created_at) FROM tasks.events WHERE status = 'PENDING' AND run_after <= now())`

// overviewPausesSQL lists the pauses: every paused task type, and the
// paused tenants among $1 (NULL: all).
const overviewPausesSQL = `
SELECT kind, name, reason, paused_by, paused_at FROM tasks.pauses
WHERE kind = 'task_type' OR $1::text[] IS NULL OR name = ANY($1)
ORDER BY kind, name`

// overviewSettingsSQL sets, for the overview's read-only transaction, what
// its plans need: no sequential scan (see ReadOverview), and no JIT. A scan
// that must stay sequential (the snapshot's one-row table) then carries
// the planner's disable cost (1e10), far above jit_above_cost, and
// PostgreSQL compiled the statement: 300–600 ms of JIT for a read of 20
// array elements that takes 0.1 ms without it.
const overviewSettingsSQL = `SELECT set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)`

// OverviewSQL returns the overview's statements by name, for EXPLAIN in
// tests and benchmarks: "pending" reads the snapshot, "pending_refresh"
// ($1 now) is the leader's refresh of it.
func OverviewSQL() map[string]string {
	return map[string]string{"counts": overviewCountsSQL, "throughput": overviewThroughputSQL,
		"pending": readPendingSnapshotSQL, "pending_refresh": refreshPendingSnapshotSQL,
		"instances": overviewInstancesSQL, "outbox": overviewOutboxSQL}
}

// ReadOverview reads the overview in one read-only transaction, every
// statement under p.Timeout. It reads partial indexes on live rows, the
// finished rows of the window only, the PENDING counts snapshot (refreshed
// first when it is older than p.PendingMaxAge) and the planner's estimates.
func (s *Store) ReadOverview(ctx context.Context, p OverviewParams) (Overview, error) {
	var o Overview
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if err := s.freshenPendingSnapshot(ctx, p.Now, cmp.Or(p.PendingMaxAge, DefaultPendingSnapshotMaxAge)); err != nil {
		return o, err
	}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET TRANSACTION READ ONLY`); err != nil {
			return err
		}
		ms := strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)
		if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, ms); err != nil {
			return err
		}
		// Every statement here is meant for a partial index. With a window
		// of finished rows that is a sliver of a month's partition, the
		// planner has been seen to prefer a parallel scan of the whole
		// partition (BenchmarkOverview): this read-only transaction rules
		// sequential scans out, so the cost stays that of the rows read.
		if _, err := tx.Exec(ctx, overviewSettingsSQL); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce($1::timestamptz, now())`, p.Now).Scan(&o.Now); err != nil {
			return err
		}
		o.Now = o.Now.UTC()
		o.Since = o.Now.Add(-cmp.Or(p.Window, time.Hour))
		tenants := p.SchemaNames
		if tenants != nil && len(tenants) == 0 {
			tenants = []string{} // no tenant at all: every branch matches nothing
		}
		asOf, pending, ages, err := readPendingSnapshot(ctx, tx, tenants)
		if err != nil {
			return err
		}
		o.PendingAsOf, o.OldestPending = asOf, ages
		if o.Counts, err = queryAll(ctx, tx, "reading task counts", overviewCountsSQL, scanTaskCount, tenants, o.Since); err != nil {
			return err
		}
		o.Counts = append(pending, o.Counts...)
		if o.Throughput, err = queryAll(ctx, tx, "reading throughput", overviewThroughputSQL, scanThroughputBucket, tenants, o.Since); err != nil {
			return err
		}
		if o.Instances, err = queryAll(ctx, tx, "reading the instances", overviewInstancesSQL, scanInstance); err != nil {
			return err
		}
		if o.Paused, err = queryAll(ctx, tx, "reading pauses", overviewPausesSQL, scanPause, tenants); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, overviewOutboxSQL).Scan(&o.Outbox.Pending, &o.Outbox.Processing,
			&o.Outbox.DeadLetter, &o.Outbox.Held, &o.Outbox.OldestPending); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return o, wrap("reading the overview", err)
	}
	if o.Estimates, err = s.EstimateTaskRows(ctx); err != nil {
		return o, err
	}
	return o, nil
}

func scanTaskCount(row pgx.Row) (TaskCount, error) {
	var c TaskCount
	var status string
	err := row.Scan(&status, &c.TaskType, &c.SchemaName, &c.Count)
	c.Status = wftype.TaskStatus(status)
	return c, err
}

func scanThroughputBucket(row pgx.Row) (ThroughputBucket, error) {
	var b ThroughputBucket
	err := row.Scan(&b.Minute, &b.Completed, &b.Failed, &b.Cancelled, &b.DeadLetter)
	b.Minute = b.Minute.UTC()
	return b, err
}

// Instances lists the wf instances connected to the store's database
// (ReadOverview's Instances). A read replica sees none of the primary's
// sessions: an overview read there takes its instances from the primary.
func (s *Store) Instances(ctx context.Context) ([]Instance, error) {
	return queryAll(ctx, s.db, "reading the instances", overviewInstancesSQL, scanInstance)
}

func scanInstance(row pgx.Row) (Instance, error) {
	var in Instance
	var app string
	if err := row.Scan(&app, &in.StartedAt, &in.Address, &in.Leader); err != nil {
		return in, err
	}
	// wf-leader:<service>:<owner> or wf-serve:<service>:<owner>; an
	// owner may itself hold colons.
	in.Role = "engine"
	rest, api := strings.CutPrefix(app, "wf-serve:")
	if api {
		in.Role = "api"
	} else {
		rest = strings.TrimPrefix(app, "wf-leader:")
	}
	in.Service, in.Owner, _ = strings.Cut(rest, ":")
	in.StartedAt = in.StartedAt.UTC()
	return in, nil
}
