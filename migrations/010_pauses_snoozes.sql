-- wf:database queue
-- wf schema, version 10: pause and resume, snooze.
--
-- tasks.pauses holds the task types and tenants whose PENDING tasks no
-- instance claims (the claim statements read it), one row per pause. It is
-- tiny (a row per paused name) and read by every claim, so it has no
-- index but its primary key.
CREATE TABLE tasks.pauses (
    kind      varchar(20)  NOT NULL CHECK (kind IN ('task_type', 'tenant')),
    name      varchar(255) NOT NULL CHECK (name <> ''),
    reason    text,
    paused_by varchar(255),
    paused_at timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, name)
);

-- How many times a handler answered "snooze" (come back later): a snooze
-- puts the task back to PENDING without counting a retry, and the task
-- type's max_snoozes bounds how often it may, so a handler cannot keep a
-- task alive for ever.
ALTER TABLE tasks.tasks ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
