-- wf schema, version 17: a snapshot of the PENDING counts for the overview.
--
-- Counting the PENDING tasks by type and tenant reads every entry of the
-- claim index (95 ms at 100,000 PENDING on a loaded machine), so the
-- dashboard's overview and the leader's gauges read this snapshot instead:
-- one row, rewritten by the leader every few seconds with one statement
-- (store.RefreshPendingSnapshot) and by a reader that finds it stale (no
-- leader running). Its arrays are parallel, one element per task type and
-- tenant with PENDING tasks: how many, how many due and the earliest due
-- run_after (NULL: none due), as of taken_at. Arrays rather than a JSON
-- document: unnest reads 200 elements in well under a millisecond, where
-- jsonb_to_recordset took milliseconds for 20.
-- Reading it costs the same whatever the backlog; taken_at is shown as the
-- counts' freshness. Counting incrementally (a counter row per type and
-- tenant updated by enqueue, claim and requeue) was rejected: every enqueue
-- and claim would update the same hot rows.
-- wf:database queue
CREATE TABLE tasks.pending_snapshot (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    taken_at timestamptz NOT NULL,
    task_types text[] NOT NULL,
    schema_names text[] NOT NULL,
    pending bigint[] NOT NULL,
    due bigint[] NOT NULL,
    oldest_due_at timestamptz[] NOT NULL
);
