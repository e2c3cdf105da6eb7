-- wf schema, version 31: events in the catalog's outbox keep their
-- provenance.
--
-- An event written through catalog.outbox (a catalog in a database of its
-- own) lost, on its way into tasks.events, the task that made it and the
-- trace context of the span it was emitted in: the relay had nowhere to
-- read them from. Both are nullable, as in tasks.events: a row recorded by
-- the previous release relays as before, with no provenance.
-- wf:database catalog
ALTER TABLE catalog.outbox
    ADD COLUMN traceparent    text,
    ADD COLUMN source_task_id uuid;
