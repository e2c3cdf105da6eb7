-- wf:database queue
-- wf schema, version 26: the workflows each live instance declares.
--
-- A run advances where its workflow is known: the step pass of an instance
-- whose specs declare it (migration 025). A run whose workflow no running
-- instance declares any more (removed from every instance's specs) would
-- wait for its deadline. So every `wf run` instance states here which
-- workflows its specs declare, with a time until which the statement holds
-- (expires_at), renewed well before it runs out; a restart within that
-- time keeps its workflows declared. The leader's pass fails the RUNNING
-- runs of a workflow that no unexpired row names, unless an instance that
-- stated nothing is connected (a wf of an earlier version: its workflows
-- are unknown), and deletes the rows that ran out. One row per instance:
-- a handful of rows, read whole.
CREATE TABLE tasks.instance_workflows (
    owner_id   text        PRIMARY KEY,  -- the instance (engine.Config.Owner)
    service    text        NOT NULL,     -- its service name (NAME)
    workflows  text[]      NOT NULL,     -- the workflows its specs declare
    expires_at timestamptz NOT NULL      -- the statement holds until then
);
