-- wf:database queue
-- wf schema, version 9: the claim index carries each PENDING task's tenant.
--
-- The dashboard's overview, `wf tasks stats` and the leader's queue metrics
-- count PENDING tasks by type and tenant. tasks_claim_idx held the type but
-- not the tenant, so each count read every PENDING row's heap tuple (at
-- 100,000 PENDING tasks, over 100 ms). With schema_name as an INCLUDE column
-- the count is an index-only scan of the pages the visibility map marks
-- all-visible. The claim's use of the index (its key columns and order) is
-- unchanged, and the index still holds PENDING rows only, so enqueue and
-- claim write no more index entries than before; each entry grows by the
-- tenant's name.
--
-- The index is rebuilt on every partition, holding a SHARE lock on the
-- table (writes wait) for as long as it takes to index the PENDING rows.
DROP INDEX tasks.tasks_claim_idx;
CREATE INDEX tasks_claim_idx ON tasks.tasks (task_type, execution_mode, priority DESC, run_after, task_id)
    INCLUDE (schema_name) WHERE status = 'PENDING';
