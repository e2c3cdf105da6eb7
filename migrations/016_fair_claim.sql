-- wf schema, version 16: fair claiming across tenants.
--
-- A claim takes a share of its batch from each tenant with due tasks of a
-- task type (engine/store/claim_fair.go). It finds those tenants with one
-- probe each (a loose index scan: the first tenant, then the first after
-- it, and so on) and reads each tenant's oldest due tasks, both in the
-- order of this index: the PENDING rows of a type and mode, by tenant, then
-- as tasks_claim_idx orders them. tasks_claim_idx stays: it gives the order
-- of a claim with fairness off, and of the part of a fair batch that no
-- tenant's share took. Like tasks_claim_idx, the index holds PENDING rows
-- only, so it stays as small as the backlog; each enqueue writes one more
-- index entry.
-- wf:database queue
CREATE INDEX tasks_tenant_claim_idx ON tasks.tasks (task_type, execution_mode, schema_name, priority DESC, run_after, task_id)
    WHERE status = 'PENDING';
