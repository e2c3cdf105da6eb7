package execution

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
	"github.com/wfhq/wf/wftype"
)

// MaxErrorLen bounds the error text stored on a task.
const MaxErrorLen = 8 << 10

// Decide turns a run's error into the task's next status: COMPLETED on
// success; FAILED for a permanent error or a SYNCHRONOUS run (its caller saw
// it fail); PENDING with a backoff while retries remain; else DEAD_LETTER.
func Decide(task *wftype.Task, runErr error, now time.Time, backoff func(int) time.Duration) (status wftype.TaskStatus, retryCount int, runAfter *time.Time) {
	switch {
	case runErr == nil:
		return wftype.StatusCompleted, task.RetryCount, nil
	case wftype.IsPermanent(runErr) || task.ExecutionMode == wftype.ModeSync:
		return wftype.StatusFailed, task.RetryCount, nil
	case task.RetryCount < task.MaxRetries:
		at := now.Add(backoff(task.RetryCount))
		return wftype.StatusPending, task.RetryCount + 1, &at
	default:
		return wftype.StatusDeadLetter, task.RetryCount, nil
	}
}

// Outcome turns the result of one run of task into the row change that
// store.FinishTasks applies: the status Decide chooses under rule's backoff
// (a retry's delay as Finish.RetryIn, counted from the statement's clock, not
// from now), the outputs, and the error text (bounded). A snooze
// (wftype.SnoozeError) of an ASYNCHRONOUS task within rule.MaxSnoozes puts
// it back to PENDING after its delay with its retries as they were; past
// the bound it is a failed attempt like any other error, said so in its
// text.
func Outcome(task *wftype.Task, rule Rule, outputs json.RawMessage, runErr error, now time.Time) store.Finish {
	backoff := rule.Backoff
	if backoff == nil {
		backoff = DefaultBackoff
	}
	if sn, ok := wftype.SnoozeOf(runErr); ok && task.ExecutionMode == wftype.ModeAsync {
		if task.Snoozes < rule.MaxSnoozes {
			msg := boundError(runErr.Error())
			return store.Finish{ID: task.ID, Status: wftype.StatusPending, RetryCount: task.RetryCount, Outputs: outputs,
				RetryIn: sn.Delay, Snoozed: true, Error: &msg}
		}
		runErr = fmt.Errorf("%w (the task was snoozed %d times, as many as its task type's max_snoozes allows; this one counts as a failed attempt)",
			runErr, task.Snoozes)
	}
	status, retries, runAfter := Decide(task, runErr, now, backoff)
	// The outcome is of this claim: written only while the task is still
	// on its attempt (see store.Finish.Attempt).
	o := store.Finish{ID: task.ID, Status: status, RetryCount: retries, Outputs: outputs, Attempt: task.Attempts}
	if runAfter != nil {
		// The delay, not the time: the statement adds it to the database's
		// clock, so a host whose clock is off does not move the retry.
		o.RetryIn = runAfter.Sub(now)
	}
	if runErr != nil {
		msg := boundError(runErr.Error())
		o.Error = &msg
	}
	return o
}

// boundError is an error text as it is stored, logged and sent in
// task.failed events, where anyone may read it: credentials in URLs
// redacted (internal/redact), at most MaxErrorLen bytes.
func boundError(msg string) string {
	msg = redact.String(msg)
	if len(msg) > MaxErrorLen {
		return msg[:MaxErrorLen] + "…"
	}
	return msg
}

// MergeOutputs adds what the reporters return at Finish (a report URL) to a
// handler's outputs, a JSON object; outputs that are not an object are kept
// under "result".
func MergeOutputs(outputs json.RawMessage, extra map[string]any) (json.RawMessage, error) {
	if len(extra) == 0 {
		return outputs, nil
	}
	merged := map[string]any{}
	if len(outputs) > 0 && string(outputs) != "null" {
		if err := json.Unmarshal(outputs, &merged); err != nil {
			merged = map[string]any{"result": json.RawMessage(outputs)}
		}
	}
	for k, v := range extra {
		merged[k] = v
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("error encoding outputs: %w", err)
	}
	return b, nil
}
