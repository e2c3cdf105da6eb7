package workflow_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/maintenance/janitor"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/engine/workflow"
	"github.com/wfhq/wf/wftype"
)

// orphanTenant is the tenant the orphan tests delete.
const orphanTenant = "s_doomed"

// setupTenantRun builds an engine that does not run, on a fake clock, with
// tenant orphanTenant registered and a run of workflow name started in it.
func setupTenantRun(t *testing.T, name string) (*bundle, *clock.Fake, wftype.WorkflowRun) {
	t.Helper()
	clk := clock.NewFake(time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC))
	b := setup(t, clk, false)
	_, err := b.pool.Exec(context.Background(),
		`INSERT INTO catalog.catalogs (catalog_id, schema_name) VALUES ('doomed', $1)`, orphanTenant)
	require.NoError(t, err)
	run, err := b.e.Workflows().Start(context.Background(), b.st, workflow.StartRequest{
		Workflow: name, SchemaName: orphanTenant, Inputs: json.RawMessage(`{}`)})
	require.NoError(t, err)
	return b, clk, run
}

// claimStepA claims, for owner "w", the task of step a of a run of pair
// (an echo task): it is ACTIVE, step b's PENDING.
func (b *bundle) claimStepA(t *testing.T, clk *clock.Fake) []wftype.Task {
	t.Helper()
	claimed, err := b.st.ClaimTasks(context.Background(), store.ClaimParams{Owner: "w", Total: 1, Now: clk.DBNow(),
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "echo", Max: 1, Lease: time.Hour}}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	return claimed
}

// deleteTenant deletes orphanTenant's catalog, as DELETE /catalogs/{id} does.
func (b *bundle) deleteTenant(t *testing.T) {
	t.Helper()
	require.NoError(t, b.st.InTx(context.Background(), func(tx *store.Store) error {
		_, _, err := tx.DeleteCatalog(context.Background(), "doomed")
		return err
	}))
}

// liveTasks counts a run's PENDING and ACTIVE tasks and its recorded step
// ends not yet applied.
func (b *bundle) liveTasks(t *testing.T, run uuid.UUID) (live, recorded int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.pool.QueryRow(ctx,
		`SELECT count(*) FROM tasks.tasks WHERE workflow_run_id = $1 AND status IN ('PENDING', 'ACTIVE')`, run).Scan(&live))
	require.NoError(t, b.pool.QueryRow(ctx,
		`SELECT count(*) FROM tasks.workflow_step_ends WHERE run_id = $1`, run).Scan(&recorded))
	return live, recorded
}

// requireEndedByTenant checks that a run failed because its tenant is gone,
// once, and that nothing of it is left to run.
func (b *bundle) requireEndedByTenant(t *testing.T, id uuid.UUID) workflow.Status {
	t.Helper()
	s, err := b.e.Workflows().Get(context.Background(), b.st, id)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status, "the run ends as its tenant's tasks are dead-lettered")
	require.NotNil(t, s.Run.Error)
	require.Contains(t, *s.Run.Error, "tenant "+orphanTenant+" no longer exists")
	require.Equal(t, 1, events(t, b.pool, workflow.EventFailed, id))
	live, recorded := b.liveTasks(t, id)
	require.Zero(t, live, "no task of the run is left to run")
	require.Zero(t, recorded, "no step end is left for a step pass")
	for _, st := range s.Steps {
		require.NotEqual(t, wftype.StepRunning, st.Status, "step %s", st.Step)
	}
	return s
}

// TestOrphanSweepFailsTheRunsOfADeletedTenant: the janitor's orphan sweep
// dead-lettered the step tasks of a deleted tenant without telling their
// run, which stayed RUNNING until its deadline. Now the sweep hands their
// ends to the step hook in its transaction: the run fails at once, with the
// tenant's deletion as its error, and its task held by a runner can no
// longer be completed.
func TestOrphanSweepFailsTheRunsOfADeletedTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, run := setupTenantRun(t, "pair")
	claimed := b.claimStepA(t, clk)
	b.deleteTenant(t)

	res, err := janitor.New(janitor.Config{Store: b.st, Clock: clk}).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Orphaned)
	b.requireEndedByTenant(t, run.ID)

	// The runner of step a reports too late: nothing is written.
	done, err := b.st.FinishTasks(ctx, store.FinishParams{Owner: "w", Now: clk.DBNow()},
		[]store.Finish{{ID: claimed[0].ID, Status: wftype.StatusCompleted, Attempt: claimed[0].Attempts}})
	require.NoError(t, err)
	require.Empty(t, done)
	b.requireEndedByTenant(t, run.ID)
}

// TestOrphanSweepBatchFailsTheWholeRun: a sweep whose batch holds only one
// of a run's tasks fails the run, and the run's failure cancels its other
// PENDING tasks in the same transaction, so none of them runs.
func TestOrphanSweepBatchFailsTheWholeRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, run := setupTenantRun(t, "fan50")
	live, _ := b.liveTasks(t, run.ID)
	require.Equal(t, 3, live, "two items of each and side")
	b.deleteTenant(t)

	res, err := janitor.New(janitor.Config{Store: b.st, Clock: clk, BatchSize: 1}).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Orphaned)
	s := b.requireEndedByTenant(t, run.ID)
	// Whichever task the batch took fails its step; the other step's
	// PENDING tasks were cancelled, and so was the step.
	for _, name := range []string{"each", "side"} {
		require.Contains(t, []wftype.StepStatus{wftype.StepFailed, wftype.StepCancelled}, step(t, s, name).Status, name)
	}
	requireNotRun(t, s, "after")
}

// TestOrphanSweepWithoutWorkflowsRecordsTheEnds: the janitor of an
// instance whose specs declare no workflow records the ends of the step
// tasks it dead-letters, and the step pass of an instance that declares
// the workflow fails the run from them.
func TestOrphanSweepWithoutWorkflowsRecordsTheEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, run := setupTenantRun(t, "pair")
	b.deleteTenant(t)

	res, err := janitor.New(janitor.Config{Store: store.New(b.pool), Clock: clk}).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Orphaned)
	_, recorded := b.liveTasks(t, run.ID)
	require.Equal(t, 2, recorded, "both ends wait for a step pass")

	n, err := b.e.Workflows().Sweep(ctx, b.st, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	b.requireEndedByTenant(t, run.ID)
}

// TestTenantsTasksCancelledInBulkFailItsRun: the other way a tenant's
// step tasks end together, a bulk cancel of the tenant's live tasks (POST
// /tasks/cancel, wf tasks cancel --schema-name), already reaches the step
// hook in its transaction: the run fails at once and nothing of it is left.
func TestTenantsTasksCancelledInBulkFailItsRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, clk, run := setupTenantRun(t, "pair")
	b.claimStepA(t, clk)
	res, err := b.st.CancelTasks(ctx, store.TaskMatch{
		Statuses: []wftype.TaskStatus{wftype.StatusPending, wftype.StatusActive}, SchemaNames: []string{orphanTenant}})
	require.NoError(t, err)
	require.Equal(t, 2, res.Cancelled)
	s, err := b.e.Workflows().Get(ctx, b.st, run.ID)
	require.NoError(t, err)
	require.Equal(t, wftype.RunFailed, s.Run.Status)
	require.Contains(t, *s.Run.Error, "was cancelled")
	live, recorded := b.liveTasks(t, run.ID)
	require.Zero(t, live)
	require.Zero(t, recorded)
}
