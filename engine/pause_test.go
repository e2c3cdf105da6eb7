package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// anyRunner runs tasks of the types it was given, doing nothing.
type anyRunner struct{ types []string }

func (r anyRunner) Name() string  { return "any" }
func (r anyRunner) Priority() int { return 100 }
func (r anyRunner) CanHandle(m wftype.ExecutionMode, tt string) bool {
	for _, t := range r.types {
		if t == tt {
			return m == wftype.ModeAsync
		}
	}
	return false
}
func (r anyRunner) Run(context.Context, *wftype.Task, reporters.Reporter) (json.RawMessage, error) {
	return nil, nil
}

// statusCount counts the tasks of a type and tenant in a status.
func statusCount(t *testing.T, pool *pgxpool.Pool, taskType, schema string, status wftype.TaskStatus) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM tasks.tasks WHERE task_type = $1 AND schema_name = $2 AND status = $3`,
		taskType, schema, status).Scan(&n))
	return n
}

// TestPauseHonouredByEveryInstance: three instances share the queue; a
// paused task type and a paused tenant are claimed by none of them while
// everything else runs (the other tasks are claimed by the same statements,
// so their completion proves the claims ran after the pause), and run once
// resumed.
func TestPauseHonouredByEveryInstance(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	ctx := context.Background()
	_, err := st.CreateCatalog(ctx, store.NewCatalog{ID: "held", SchemaName: "s_held"})
	require.NoError(t, err)
	_, _, err = st.PauseQueue(ctx, store.PauseParams{Kind: store.PauseTaskType, Name: "a"})
	require.NoError(t, err)
	_, _, err = st.PauseQueue(ctx, store.PauseParams{Kind: store.PauseTenant, Name: "s_held"})
	require.NoError(t, err)

	types := []string{"a", "b"}
	for i := range 3 {
		startEngine(t, pool, fmt.Sprintf("e%d", i), anyRunner{types}, func(c *engine.Config) {
			c.Pairs = []runners.Pair{{Mode: wftype.ModeAsync, TaskType: "a"}, {Mode: wftype.ModeAsync, TaskType: "b"}}
			c.Slots = 10
		})
	}

	var batch []store.NewTask
	for _, tt := range types {
		for _, schema := range []string{wftype.SystemSchema, "s_held"} {
			for range 40 {
				batch = append(batch, store.NewTask{SchemaName: schema, Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync,
					TaskType: tt, MaxRetries: 3})
			}
		}
	}
	_, err = st.InsertTasks(ctx, batch)
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		return statusCount(t, pool, "b", wftype.SystemSchema, wftype.StatusCompleted) == 40
	}, 60*time.Second, 20*time.Millisecond)
	for _, held := range [][2]string{{"a", wftype.SystemSchema}, {"a", "s_held"}, {"b", "s_held"}} {
		require.Equal(t, 40, statusCount(t, pool, held[0], held[1], wftype.StatusPending), held)
	}

	_, err = st.ResumeQueue(ctx, store.PauseTaskType, "a")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return statusCount(t, pool, "a", wftype.SystemSchema, wftype.StatusCompleted) == 40
	}, 60*time.Second, 20*time.Millisecond)
	require.Equal(t, 40, statusCount(t, pool, "a", "s_held", wftype.StatusPending))
	require.Equal(t, 40, statusCount(t, pool, "b", "s_held", wftype.StatusPending))

	_, err = st.ResumeQueue(ctx, store.PauseTenant, "s_held")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return statusCount(t, pool, "a", "s_held", wftype.StatusCompleted) == 40 &&
			statusCount(t, pool, "b", "s_held", wftype.StatusCompleted) == 40
	}, 60*time.Second, 20*time.Millisecond)
}
