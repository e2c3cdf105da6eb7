package execution

import (
	"context"
	"log/slog"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TaskAttrs are the attributes every log line about one task carries: its
// id, type, tenant and attempt, so a line can be found by any of them.
func TaskAttrs(t *wftype.Task) []any {
	return []any{"task_id", t.ID, "task_type", t.TaskType, "schema_name", t.SchemaName, "attempt", t.Attempts}
}

// LogOutcome writes the one line a written outcome deserves: a retry at
// warn, FAILED and DEAD_LETTER at error, a completion at debug. extra
// attributes (such as the janitor's reason) follow the task's.
func LogOutcome(ctx context.Context, log *slog.Logger, t *wftype.Task, o store.Finish, extra ...any) {
	attrs := append(TaskAttrs(t), extra...)
	errText := ""
	if o.Error != nil {
		errText = *o.Error
	}
	switch {
	case o.Status == wftype.StatusPending && o.Snoozed:
		attrs = append(attrs, "snoozes", t.Snoozes+1, "retry_in", o.RetryIn.String(), "reason", errText)
		log.InfoContext(ctx, "task snoozed", attrs...)
	case o.Status == wftype.StatusPending:
		attrs = append(attrs, "retry", o.RetryCount, "max_retries", t.MaxRetries, "err", errText)
		if o.RunAfter != nil {
			attrs = append(attrs, "run_after", o.RunAfter.UTC())
		} else {
			attrs = append(attrs, "retry_in", o.RetryIn.String())
		}
		log.WarnContext(ctx, "task failed; retrying", attrs...)
	case o.Status == wftype.StatusFailed:
		log.ErrorContext(ctx, "task failed permanently", append(attrs, "err", errText)...)
	case o.Status == wftype.StatusDeadLetter:
		log.ErrorContext(ctx, "task dead-lettered: out of retries", append(attrs, "retries", o.RetryCount, "err", errText)...)
	default:
		log.DebugContext(ctx, "task completed", append(attrs, "status", string(o.Status))...)
	}
}
