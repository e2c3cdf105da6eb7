-- wf schema, version 21: which task emitted an event, kept with the task.
--
-- Events are deleted once their subscriptions have consumed them, so the
-- outbox alone cannot say what a task emitted. Two records, written by the
-- statement that writes the event (no extra statement, no extra row):
--
--   * tasks.events.source_task_id: the task whose run (or outcome) emitted
--     the event, while the event lives (PENDING, PROCESSING, DEAD_LETTER);
--   * tasks.tasks.emitted_events: a JSON array, oldest first, of the last 50
--     events the task emitted, {"event_id", "event_type", "created_at"},
--     kept with the task row: it lives exactly as long as the task (until
--     retention deletes the row or drops its partition), and reading a
--     task's events is a primary-key read, whatever the size of the outbox.
--
-- A side table (task id, event id) was the other choice: it would need its
-- own retention in step with the tasks' partitions and an index, for data
-- that is only ever read with its task. Adding nullable columns without a
-- default changes only the catalog: no partition is rewritten.
-- wf:database queue
ALTER TABLE tasks.events ADD COLUMN source_task_id uuid;
ALTER TABLE tasks.tasks ADD COLUMN emitted_events jsonb;

-- tasks.append_emitted appends events (a JSON array of {"event_id",
-- "event_type", "created_at"}) to a task's record and keeps the last 50.
CREATE FUNCTION tasks.append_emitted(log jsonb, events jsonb)
RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(jsonb_agg(e ORDER BY n), '[]'::jsonb)
    FROM (SELECT e, n, count(*) OVER () AS total
          FROM jsonb_array_elements(coalesce(log, '[]'::jsonb) || coalesce(events, '[]'::jsonb))
               WITH ORDINALITY AS x(e, n)) k
    WHERE n > total - 50
$$;
