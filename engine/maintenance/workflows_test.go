package maintenance_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// addRun creates a run with two steps at created and, unless status is
// RUNNING, ends it with status at finished.
func (b *bundle) addRun(t *testing.T, status wftype.RunStatus, created, finished time.Time) uuid.UUID {
	t.Helper()
	id, _, err := store.NewID()
	require.NoError(t, err)
	run, err := b.store.InsertWorkflowRun(b.ctx, store.NewWorkflowRun{
		ID: id, Workflow: "w", SchemaName: wftype.SystemSchema, Inputs: json.RawMessage(`{}`), Timeout: time.Hour,
		Steps: []string{"a", "b"}, Now: &created,
	})
	require.NoError(t, err)
	if status != wftype.RunRunning {
		run.Status = status
		require.NoError(t, b.store.SaveWorkflowRun(b.ctx, run, &finished))
	}
	return id
}

// TestWorkflowRunRetention: maintenance deletes the runs that ended before
// the window of their status (completed and cancelled: Completed, failed:
// Failed), with their step rows, in batches; it keeps younger ones, a
// RUNNING run however old, and a failed run whose task is still ACTIVE.
func TestWorkflowRunRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Date(2031, 6, 10, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	gone := []uuid.UUID{
		b.addRun(t, wftype.RunCompleted, ago(32*day), ago(31*day)),
		b.addRun(t, wftype.RunCancelled, ago(32*day), ago(31*day)),
		b.addRun(t, wftype.RunFailed, ago(62*day), ago(61*day)),
	}
	kept := []uuid.UUID{
		b.addRun(t, wftype.RunCompleted, ago(32*day), ago(29*day)),
		b.addRun(t, wftype.RunFailed, ago(32*day), ago(31*day)), // within Failed's 60 days
		b.addRun(t, wftype.RunRunning, ago(100*day), time.Time{}),
	}
	live := b.addRun(t, wftype.RunFailed, ago(62*day), ago(61*day))
	kept = append(kept, live)
	b.ensurePartitions(t, ago(62*day), 3)
	b.exec(t, `
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, status, workflow_run_id, workflow_step)
VALUES (tasks.uuid_v7($1), $1, 'system', 'SYSTEM', 'ASYNCHRONOUS', 'noop', 'ACTIVE', $2, 'a')`, ago(62*day), live)

	sup := b.supervisor(t, func(c *maintenance.Config) {
		c.BatchSize = 2
		c.Retention.Failed = 60 * day
	})
	res, err := sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.EqualValues(t, len(gone), res.WorkflowRunsDeleted)
	for _, id := range gone {
		require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.workflow_runs WHERE run_id = $1`, id))
		require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.workflow_steps WHERE run_id = $1`, id), "its steps go with it")
	}
	for _, id := range kept {
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tasks.workflow_runs WHERE run_id = $1`, id))
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM tasks.workflow_steps WHERE run_id = $1`, id))
	}

	// Its task ended: the failed run goes at the next run; nothing else does.
	b.exec(t, `UPDATE tasks.tasks SET status = 'COMPLETED', finished_at = $2 WHERE workflow_run_id = $1`, live, ago(60*day))
	res, err = sup.RunOnce(b.ctx, now)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.WorkflowRunsDeleted)
	require.Zero(t, b.count(t, `SELECT count(*) FROM tasks.workflow_runs WHERE run_id = $1`, live))
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM tasks.workflow_runs`))
}
