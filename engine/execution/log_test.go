package execution_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// TestLogOutcome: one structured line per outcome, at the level its
// severity calls for, with the task's id, type, tenant and attempt.
func TestLogOutcome(t *testing.T) {
	t.Parallel()
	task := &wftype.Task{ID: uuid.New(), TaskType: "ingestion", SchemaName: "s_cat_a", Attempts: 3, MaxRetries: 5}
	msg := "disk full"
	cases := []struct {
		outcome store.Finish
		level   string
		message string
	}{
		{store.Finish{Status: wftype.StatusPending, Error: &msg, RetryCount: 3, RetryIn: 8 * time.Second}, "WARN", "task failed; retrying"},
		{store.Finish{Status: wftype.StatusFailed, Error: &msg}, "ERROR", "task failed permanently"},
		{store.Finish{Status: wftype.StatusDeadLetter, Error: &msg, RetryCount: 5}, "ERROR", "task dead-lettered: out of retries"},
		{store.Finish{Status: wftype.StatusCompleted}, "DEBUG", "task completed"},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		execution.LogOutcome(context.Background(), log, task, c.outcome, "reason", "lease expired")
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		require.Len(t, lines, 1)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
		require.Equal(t, c.level, got["level"])
		require.Equal(t, c.message, got["msg"])
		require.Equal(t, task.ID.String(), got["task_id"])
		require.Equal(t, "ingestion", got["task_type"])
		require.Equal(t, "s_cat_a", got["schema_name"])
		require.Equal(t, float64(3), got["attempt"])
		require.Equal(t, "lease expired", got["reason"])
		if c.outcome.Error != nil {
			require.Equal(t, "disk full", got["err"])
		}
	}
}
