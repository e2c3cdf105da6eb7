-- wf schema, version 18: workflow runs.
--
-- A workflow run is a row of tasks.workflow_runs; its steps are ordinary
-- tasks that carry the run's id (tasks.tasks.workflow_run_id, the step's
-- name and, for the items of a for_each step, the item's index), and
-- tasks.workflow_steps keeps one row per step of a run: its status, how
-- many of its items were started and ended, and its outputs once it ended.
--
-- Why a table of runs beside the tasks, and not only a run id on tasks: a
-- run has state of its own (its inputs, deadline, status) and the engine
-- must serialise the decisions about one run (which steps a completion
-- unblocks, when a fan-in step may start) across instances. Every decision
-- about a run is taken with its row locked (SELECT ... FOR UPDATE), in the
-- transaction that finishes the step's task, so a fan-in starts exactly
-- once and a crash can neither lose nor duplicate a step. Runs are few
-- beside tasks and looked up by id, so the table is not partitioned;
-- retention does not delete finished runs yet (their tasks go with the tasks' retention).
--
-- Adding nullable columns without defaults to tasks.tasks changes only the
-- catalog; the partial index holds the steps only.
-- wf:database queue
ALTER TABLE tasks.tasks ADD COLUMN workflow_run_id uuid;
ALTER TABLE tasks.tasks ADD COLUMN workflow_step text;
ALTER TABLE tasks.tasks ADD COLUMN workflow_item integer;
CREATE INDEX tasks_workflow_run_idx ON tasks.tasks (workflow_run_id, workflow_step)
    WHERE workflow_run_id IS NOT NULL;

CREATE TABLE tasks.workflow_runs (
    run_id      uuid        PRIMARY KEY,  -- UUIDv7
    workflow    text        NOT NULL,
    schema_name text        NOT NULL,     -- the tenant its steps belong to
    status      text        NOT NULL CHECK (status IN ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED')),
    inputs      jsonb       NOT NULL,
    error       text,
    created_at  timestamptz NOT NULL,
    deadline    timestamptz NOT NULL,     -- created_at + the workflow's timeout
    finished_at timestamptz,
    attempt     integer     NOT NULL DEFAULT 1  -- 1 + the retries of the run
);
CREATE INDEX workflow_runs_running_idx ON tasks.workflow_runs (deadline) WHERE status = 'RUNNING';
CREATE INDEX workflow_runs_tenant_idx ON tasks.workflow_runs (schema_name, run_id);

CREATE TABLE tasks.workflow_steps (
    run_id     uuid        NOT NULL REFERENCES tasks.workflow_runs ON DELETE CASCADE,
    step       text        NOT NULL,
    status     text        NOT NULL CHECK (status IN ('WAITING', 'RUNNING', 'COMPLETED', 'FAILED', 'SKIPPED', 'CANCELLED')),
    items      integer,                   -- a for_each step's number of items
    started    integer     NOT NULL DEFAULT 0,  -- tasks created (items started)
    done       integer     NOT NULL DEFAULT 0,  -- items completed
    outputs    jsonb,
    error      text,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, step)
);
