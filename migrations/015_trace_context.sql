-- wf:database queue
-- wf schema, version 15: the trace context of a task and of an event.
--
-- With OpenTelemetry tracing on (OTEL_* variables), the code that enqueues
-- a task or emits an event stores the W3C traceparent of its span
-- ("00-<trace id>-<span id>-<flags>") with the row, and the engine
-- continues that trace when it claims and runs the task, or turns the event
-- into its subscriptions' tasks. NULL when tracing is off or there was no
-- span. Adding a nullable column without a default changes only the
-- catalog: no partition is rewritten.
ALTER TABLE tasks.tasks ADD COLUMN traceparent text;
ALTER TABLE tasks.events ADD COLUMN traceparent text;
