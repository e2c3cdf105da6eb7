package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// count counts the statements that start with prefix, or hold it when
// contains is set.
func count(sql []string, prefix string, contains bool) int {
	n := 0
	for _, s := range sql {
		if (contains && strings.Contains(s, prefix)) || (!contains && strings.HasPrefix(s, prefix)) {
			n++
		}
	}
	return n
}

// TestStepHookCostsPlainTasksNothing: with a step hook installed (as when
// the specs declare a workflow), a batch of tasks that carry no run id ends
// in one statement outside a transaction, as without the hook, and the
// hook is not called; a batch holding a step's task ends the plain tasks
// the same way and the step's in a transaction with the hook.
func TestStepHookCostsPlainTasksNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &dbtest.StatementLog{}
	pool := dbtest.PoolWith(t, dbtest.NewDatabase(t), func(c *pgxpool.Config) { c.ConnConfig.Tracer = log })

	var hooked [][]store.FinishedStep
	st := store.New(pool).WithStepHook(func(_ context.Context, tx *store.Store, steps []store.FinishedStep) error {
		hooked = append(hooked, steps)
		return nil
	})
	batch := make([]store.NewTask, 7)
	for i := range batch {
		batch[i] = newTask("noop")
	}
	_, err := st.InsertTasks(ctx, batch)
	require.NoError(t, err)
	tasks, err := st.ClaimTasks(ctx, claimParams("w1", 7))
	require.NoError(t, err)
	require.Len(t, tasks, 7)
	run := uuid.Must(uuid.NewV7())
	step := tasks[6].ID
	_, err = pool.Exec(ctx, `UPDATE tasks.tasks SET workflow_run_id = $1, workflow_step = 'only' WHERE task_id = $2`, run, step)
	require.NoError(t, err)
	finish := func(ts []wftype.Task) []uuid.UUID {
		outcomes := make([]store.Finish, len(ts))
		for i, task := range ts {
			outcomes[i] = store.Finish{ID: task.ID, Status: wftype.StatusCompleted}
		}
		done, err := st.FinishTasks(ctx, store.FinishParams{Owner: "w1"}, outcomes)
		require.NoError(t, err)
		return done
	}

	log.Take()
	require.Len(t, finish(tasks[:3]), 3)
	sql := log.Take()
	require.Equal(t, 1, count(sql, "update tasks.tasks", true), "one statement: %q", sql)
	require.Zero(t, count(sql, "begin", false), "no transaction: %q", sql)
	require.Zero(t, count(sql, "commit", false), "no transaction: %q", sql)
	require.Empty(t, hooked)

	// Plain tasks and a step's task: the step's ends in a transaction with the hook.
	done := finish(tasks[3:])
	require.ElementsMatch(t, []uuid.UUID{tasks[3].ID, tasks[4].ID, tasks[5].ID, step}, done)
	sql = log.Take()
	require.Equal(t, 1, count(sql, "begin", false), "%q", sql)
	require.Equal(t, 1, count(sql, "commit", false), "%q", sql)
	require.Len(t, hooked, 1)
	require.Len(t, hooked[0], 1)
	require.Equal(t, step, hooked[0][0].TaskID)
	require.Equal(t, run, hooked[0][0].RunID)
	require.Equal(t, "only", hooked[0][0].Step)
}
