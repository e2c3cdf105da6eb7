package dispatch

import (
	"encoding/json"
	"time"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// Outcome turns the result of one run of task into the row change that
// store.FinishTasks applies: the status Decide chooses under rule's backoff
// (a retry's delay as Finish.RetryIn, counted from the statement's clock, not
// from now), the outputs, and the error text (bounded). The dispatcher's batched
// completion and `wf exec` both use it, so a task ends the same way
// whichever process ran it.
func Outcome(task *wftype.Task, rule Rule, outputs json.RawMessage, runErr error, now time.Time) store.Finish {
	backoff := rule.Backoff
	if backoff == nil {
		backoff = DefaultBackoff
	}
	status, retries, runAfter := Decide(task, runErr, now, backoff)
	o := store.Finish{ID: task.ID, Status: status, RetryCount: retries, Outputs: outputs}
	if runAfter != nil {
		// The delay, not the time: the statement adds it to the database's
		// clock, so a host whose clock is off does not move the retry.
		o.RetryIn = runAfter.Sub(now)
	}
	if runErr != nil {
		msg := runErr.Error()
		if len(msg) > maxErrorLen {
			msg = msg[:maxErrorLen] + "…"
		}
		o.Error = &msg
	}
	return o
}

// MergeOutputs adds what the reporters return at Finish (a report URL) to a
// handler's outputs, a JSON object; outputs that are not an object are kept
// under "result".
func MergeOutputs(outputs json.RawMessage, extra map[string]any) (json.RawMessage, error) {
	return mergeOutputs(outputs, extra)
}
