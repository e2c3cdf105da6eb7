package cloudrun

import (
	"testing"

	"github.com/wfhq/wf/wftype"
)

// TestWroteResult: a claim's worker has written the outcome when the task
// ended, or when it counted a retry, even once that retry is claimed again.
func TestWroteResult(t *testing.T) {
	t.Parallel()
	owner := "vm-1"
	run := &wftype.Task{Status: wftype.StatusActive, OwnerID: &owner, Attempts: 1, RetryCount: 0}
	for _, tc := range []struct {
		name string
		cur  wftype.Task
		want bool
	}{
		{"still running", wftype.Task{Status: wftype.StatusActive, OwnerID: &owner, Attempts: 1}, false},
		{"completed", wftype.Task{Status: wftype.StatusCompleted, Attempts: 1}, true},
		{"dead letter", wftype.Task{Status: wftype.StatusDeadLetter, Attempts: 1, RetryCount: 0}, true},
		{"retry written", wftype.Task{Status: wftype.StatusPending, Attempts: 1, RetryCount: 1}, true},
		{"retry claimed again", wftype.Task{Status: wftype.StatusActive, OwnerID: &owner, Attempts: 2, RetryCount: 1}, true},
		{"cancelled", wftype.Task{Status: wftype.StatusCancelled, Attempts: 1}, false},
	} {
		if got := wroteResult(run, &tc.cur); got != tc.want {
			t.Errorf("%s: wroteResult = %t, want %t", tc.name, got, tc.want)
		}
	}
}
