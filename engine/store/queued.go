package store

import "strings"

// A notification on the task-queued channel (Channels.TaskQueued) names a
// task type that got tasks, and, when one tenant queued all of that type's
// tasks in the statement, that tenant after a unit separator (a byte no
// task type or tenant name holds). Payloads without a tenant (several
// tenants, a requeue, a retry, a sweep's "") say nothing of who queued.
const queuedSep = "\x1f"

// queuedPayloadSQL is the payload column of a statement's task-queued
// notifications, over the rows of its CTE inserted grouped by task_type.
const queuedPayloadSQL = `task_type || CASE WHEN min(schema_name) = max(schema_name)
                                     THEN chr(31) || min(schema_name) ELSE '' END`

// QueuedPayload is the payload of a task-queued notification for tasks of
// taskType queued by tenant ("" when several queued them).
func QueuedPayload(taskType, tenant string) string {
	if tenant == "" {
		return taskType
	}
	return taskType + queuedSep + tenant
}

// ParseQueued splits a task-queued notification's payload into the task
// type and the tenant that queued its tasks, "" when it does not say.
func ParseQueued(payload string) (taskType, tenant string) {
	taskType, tenant, _ = strings.Cut(payload, queuedSep)
	return taskType, tenant
}
