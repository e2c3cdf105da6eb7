-- wf schema, version 19: rate limits (a task type's rate_limit).
--
-- One row per task type and tenant ('' for the type as a whole) that has a
-- rate limit: the current window's start and the tasks started in it. The
-- claim statement reads it and adds what it claimed, under the type's
-- advisory lock (engine/store/claim_limited.go), so the count is exact
-- across instances. A row is reset when a claim finds its window over, so
-- the table holds at most a row per limited type and tenant.
-- wf:database queue
CREATE TABLE tasks.rate_windows (
    task_type    varchar(255) NOT NULL,
    schema_name  varchar(255) NOT NULL,
    window_start timestamptz  NOT NULL,
    starts       integer      NOT NULL CHECK (starts >= 0),
    PRIMARY KEY (task_type, schema_name)
);
