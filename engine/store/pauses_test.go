package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestPauseSkipsClaims: a paused task type and a paused tenant are claimed
// by neither claim statement (uncapped and globally capped) nor counted as
// due; the others are; resuming makes them claimable again.
func TestPauseSkipsClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var batch []store.NewTask
	for _, tt := range []string{"a", "b"} {
		for _, tenant := range []string{wftype.SystemSchema, "s_one", "s_two"} {
			nt := newTask(tt)
			nt.SchemaName = tenant
			if tenant != wftype.SystemSchema {
				nt.Scope = wftype.ScopeCatalog
			}
			batch = append(batch, nt, nt)
		}
	}
	_, err := b.store.InsertTasks(b.ctx, batch)
	require.NoError(t, err)
	for _, tenant := range []string{"s_one", "s_two"} {
		_, err = b.store.CreateCatalog(b.ctx, store.NewCatalog{ID: tenant[2:], SchemaName: tenant})
		require.NoError(t, err)
	}
	_, _, err = b.store.PauseQueue(b.ctx, store.PauseParams{Kind: store.PauseTenant, Name: "s_typo"})
	require.ErrorIs(t, err, wftype.ErrNotFound, "a tenant no catalog has")

	p, created, err := b.store.PauseQueue(b.ctx, store.PauseParams{Kind: store.PauseTaskType, Name: "a", Reason: "downstream is down", By: "test"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "downstream is down", *p.Reason)
	again, created, err := b.store.PauseQueue(b.ctx, store.PauseParams{Kind: store.PauseTaskType, Name: "a", Reason: "other words"})
	require.NoError(t, err)
	require.False(t, created, "a second pause keeps the first")
	require.Equal(t, p, again)
	_, _, err = b.store.PauseQueue(b.ctx, store.PauseParams{Kind: store.PauseTenant, Name: "s_one"})
	require.NoError(t, err)
	_, _, err = b.store.PauseQueue(b.ctx, store.PauseParams{Kind: "queue", Name: "x"})
	require.Error(t, err)

	pauses, err := b.store.ListPauses(b.ctx)
	require.NoError(t, err)
	require.Len(t, pauses, 2)
	require.Equal(t, store.PauseTaskType, pauses[0].Kind)
	require.Equal(t, store.PauseTenant, pauses[1].Kind)

	due, err := b.store.HasDueTasks(b.ctx, []string{"a"})
	require.NoError(t, err)
	require.False(t, due, "a paused type is not due")
	due, err = b.store.HasDueTasks(b.ctx, []string{"a", "b"})
	require.NoError(t, err)
	require.True(t, due)

	slots := []store.ClaimSlot{
		{Mode: wftype.ModeAsync, TaskType: "a", Max: 100, Lease: 60e9},
		{Mode: wftype.ModeAsync, TaskType: "b", Max: 100, Lease: 60e9},
	}
	// The capped statement first (b capped at 1), then the uncapped one.
	capped, err := b.store.Claim(b.ctx, store.ClaimParams{Owner: "w1", Slots: slots, Total: 100, Global: map[string]int{"b": 1}})
	require.NoError(t, err)
	require.Len(t, capped.Tasks, 1)
	claimed, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w1", Slots: slots, Total: 100})
	require.NoError(t, err)
	got := append(capped.Tasks, claimed...)
	require.Len(t, got, 4, "b of system and s_two, twice each")
	for _, task := range got {
		require.Equal(t, "b", task.TaskType)
		require.NotEqual(t, "s_one", task.SchemaName)
	}

	_, err = b.store.ResumeQueue(b.ctx, store.PauseTaskType, "a")
	require.NoError(t, err)
	_, err = b.store.ResumeQueue(b.ctx, store.PauseTaskType, "a")
	require.ErrorIs(t, err, wftype.ErrNotFound)
	claimed, err = b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w1", Slots: slots, Total: 100})
	require.NoError(t, err)
	require.Len(t, claimed, 4, "a of system and s_two")
	_, err = b.store.ResumeQueue(b.ctx, store.PauseTenant, "s_one")
	require.NoError(t, err)
	claimed, err = b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: "w1", Slots: slots, Total: 100})
	require.NoError(t, err)
	require.Len(t, claimed, 4, "a and b of s_one")
	for _, task := range claimed {
		require.Equal(t, "s_one", task.SchemaName)
	}
}
