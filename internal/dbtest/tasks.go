package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// CompleteTasks claims n ASYNC tasks of taskType as owner "w" (failing the
// test unless exactly n are due) and finishes each of them COMPLETED, one
// at a time.
func CompleteTasks(t testing.TB, ctx context.Context, st *store.Store, taskType string, n int) {
	t.Helper()
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Owner: "w", Total: n,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: taskType, Max: n, Lease: time.Minute}}})
	if err != nil {
		t.Fatalf("claiming %s tasks: %v", taskType, err)
	}
	if len(claimed) != n {
		t.Fatalf("claimed %d %s tasks, want %d", len(claimed), taskType, n)
	}
	for _, c := range claimed {
		if _, err := st.FinishTasks(ctx, store.FinishParams{Owner: "w"}, []store.Finish{{ID: c.ID, Status: wftype.StatusCompleted}}); err != nil {
			t.Fatalf("finishing task %s: %v", c.ID, err)
		}
	}
}
