package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// TestDedupPeriodUpgrade: keys written before migration 033 (a PENDING
// task's, as the insert of that version wrote them; a finished task's,
// released by the trigger of that version) keep their meaning after it: the
// live one is held until its task ends, then freed; the finished one's key
// is free.
func TestDedupPeriodUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, conn, m, seq := dbtest.MigratedBefore(t, ctx, "_dedup_period.sql")

	// The previous code's writes: two keyed tasks and their keys, one of
	// them then finished (its trigger deletes its key).
	now := clock.Now().UTC()
	_, err := store.New(conn).EnsurePartitionsSpan(ctx, now, now)
	require.NoError(t, err)
	live, done := store.NewTask{}, store.NewTask{}
	for _, nt := range []*store.NewTask{&live, &done} {
		id, _, err := store.NewID()
		require.NoError(t, err)
		nt.ID = id
	}
	for key, id := range map[string]store.NewTask{"old-live": live, "old-done": done} {
		_, err = conn.Exec(ctx, `
WITH d AS (INSERT INTO tasks.task_dedup (schema_name, dedup_key, task_id, task_timestamp) VALUES ('system', $1, $2, $3))
INSERT INTO tasks.tasks (task_id, "timestamp", schema_name, scope, execution_mode, task_type, dedup_key, inputs, max_retries)
VALUES ($2, $3, 'system', 'SYSTEM', 'ASYNCHRONOUS', 'noop', $1, '{}', 3)`, key, id.ID, store.IDTime(id.ID))
		require.NoError(t, err)
	}
	_, err = conn.Exec(ctx, `UPDATE tasks.tasks SET status = 'COMPLETED', finished_at = now() WHERE task_id = $1`, done.ID)
	require.NoError(t, err)

	require.NoError(t, m.MigrateTo(ctx, seq))
	st := store.New(conn)
	again := func(key string) store.InsertResult {
		nt := newTask("noop")
		nt.DedupKey = key
		res, err := st.InsertTasks(ctx, []store.NewTask{nt})
		require.NoError(t, err)
		return res[0]
	}
	r := again("old-live")
	require.True(t, r.Duplicate)
	require.Equal(t, live.ID, r.Task.ID)
	require.False(t, again("old-done").Duplicate, "a finished task's key was free and stays free")

	_, err = conn.Exec(ctx, `UPDATE tasks.tasks SET status = 'COMPLETED', finished_at = now() WHERE task_id = $1`, live.ID)
	require.NoError(t, err)
	hold, err := st.DedupKeyHold(ctx, wftype.SystemSchema, "old-live")
	require.NoError(t, err)
	require.Nil(t, hold, "a key without a period is freed as its task ends")
	require.False(t, again("old-live").Duplicate)
}
