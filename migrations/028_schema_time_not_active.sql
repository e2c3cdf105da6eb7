-- wf:database queue
-- wf schema, version 28: the tenant/time index leaves out ACTIVE rows.
--
-- Every claim and every completion writes a new version of the task's row
-- that cannot be a HOT update (status is in the partial indexes'
-- predicates), so it adds an entry to every index whose predicate the new
-- version meets. tasks_schema_time_idx, over all rows, so took one entry
-- at enqueue, one at the claim and one at the completion. An ACTIVE row
-- lives for one run, and the ACTIVE rows are few (at most the slots and
-- claimed-ahead tasks of the running instances) and all in
-- tasks_active_lease_idx, so the index now leaves them out: a claim writes
-- two index entries instead of three (in a burn-down of no-op tasks, about
-- 4 µs of PostgreSQL CPU less per task, 6% of its CPU per task at 1,000
-- slots). A tenant's task list (ListTasks) reads its rows that are not
-- ACTIVE from this index and its ACTIVE ones from tasks_active_lease_idx,
-- and merges them; the other readers of a tenant's rows name their
-- statuses (a status other than ACTIVE implies the predicate).
--
-- The index is rebuilt on every partition, holding a SHARE lock on the
-- table (writes wait) for as long as it takes to index the rows.
DROP INDEX tasks.tasks_schema_time_idx;
CREATE INDEX tasks_schema_time_idx ON tasks.tasks (schema_name, "timestamp" DESC, task_id DESC)
    WHERE status <> 'ACTIVE';
