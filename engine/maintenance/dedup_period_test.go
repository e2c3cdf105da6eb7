package maintenance_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestMaintenanceDeletesStaleDedupKeys: a run deletes the dedup keys of
// ended tasks whose unique period is over at its now, in batches, and
// leaves those still within their period and the keys of live tasks.
func TestMaintenanceDeletesStaleDedupKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := clock.Now().UTC()
	var batch []store.NewTask
	for i, period := range []time.Duration{time.Minute, time.Minute, time.Minute, 3 * time.Hour, time.Minute} {
		batch = append(batch, store.NewTask{
			SchemaName: wftype.SystemSchema, Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync,
			TaskType: "noop", Inputs: json.RawMessage(`{}`), MaxRetries: 3,
			DedupKey: "k" + string(rune('0'+i)), UniqueFor: period, UniqueStates: []wftype.TaskStatus{wftype.StatusCompleted},
		})
	}
	res, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	claimed, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w", Total: 4,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "noop", Max: 4, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, claimed, 4) // k4 stays PENDING
	var fin []store.Finish
	for _, c := range claimed {
		require.NotEqual(t, res[4].Task.ID, c.ID)
		fin = append(fin, store.Finish{ID: c.ID, Status: wftype.StatusCompleted})
	}
	_, err = b.store.FinishTasks(b.ctx, store.FinishParams{Owner: "w"}, fin)
	require.NoError(t, err)

	later := now.Add(time.Hour)
	sup, _ := b.rateSupervisor(t, later, 2)
	out, err := sup.RunOnce(b.ctx, later)
	require.NoError(t, err)
	require.EqualValues(t, 3, out.DedupKeysDeleted)
	for i, held := range []bool{false, false, false, true, true} {
		hold, err := b.store.DedupKeyHold(b.ctx, wftype.SystemSchema, "k"+string(rune('0'+i)))
		require.NoError(t, err)
		require.Equal(t, held, hold != nil, "k%d", i)
	}
	out, err = sup.RunOnce(b.ctx, later)
	require.NoError(t, err)
	require.Zero(t, out.DedupKeysDeleted)
}
