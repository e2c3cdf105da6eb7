-- wf:database queue
-- wf schema, version 12: remote runs.
--
-- tasks.remote_runs records the claims a dispatcher handed to a remote
-- runner (Cloud Run), one row per task naming the claim: owner, attempt and
-- the claim's started_at. A worker that reports over HTTP may complete or
-- fail a task only under the claim recorded here, so a task that the local
-- dispatcher runs, or an earlier claim's worker, is never a worker's to
-- finish. The row is removed when the worker finishes the task; maintenance
-- removes those of claims that ended otherwise.
CREATE TABLE tasks.remote_runs (
    task_id     uuid         PRIMARY KEY,
    "timestamp" timestamptz  NOT NULL,
    owner_id    varchar(255) NOT NULL,
    attempt     integer      NOT NULL,
    started_at  timestamptz  NOT NULL
);
