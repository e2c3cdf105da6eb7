package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
)

// TestTasksCreateDelayed: run_at and run_in set when a task first runs;
// bad or conflicting values answer 400 naming the field and create nothing.
func TestTasksCreateDelayed(t *testing.T) {
	t.Parallel()
	b := setup(t)

	at := "2031-05-04T03:02:01Z"
	res := b.do("POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "run_at": "2031-05-04T05:02:01+02:00"})
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task := b.do("GET", "/tasks/"+res.json(t)["task_id"].(string), tokClient, nil).json(t)
	require.Equal(t, "PENDING", task["status"])
	got, err := time.Parse(time.RFC3339Nano, task["run_after"].(string))
	require.NoError(t, err)
	want, _ := time.Parse(time.RFC3339, at)
	require.True(t, want.Equal(got), "run_after %s, want %s", got, want)

	before := clock.Now()
	res = b.do("POST", "/tasks", tokClient, map[string]any{"task_type": "noop", "run_in": "1h30m"})
	after := clock.Now()
	require.Equal(t, http.StatusAccepted, res.status, string(res.body))
	task = b.do("GET", "/tasks/"+res.json(t)["task_id"].(string), tokClient, nil).json(t)
	got, err = time.Parse(time.RFC3339Nano, task["run_after"].(string))
	require.NoError(t, err)
	require.False(t, got.Before(before.Add(90*time.Minute).Truncate(time.Microsecond)), "run_after %s", got)
	require.False(t, got.After(after.Add(90*time.Minute)), "run_after %s", got)

	for _, tc := range []struct {
		body    map[string]any
		pointer string
	}{
		{map[string]any{"task_type": "noop", "run_at": "tomorrow"}, "/run_at"},
		{map[string]any{"task_type": "noop", "run_in": "5 minutes"}, "/run_in"},
		{map[string]any{"task_type": "noop", "run_in": "-5m"}, "/run_in"},
		{map[string]any{"task_type": "noop", "run_in": "5m", "run_at": at}, "/run_at"},
		// A SYNCHRONOUS task runs in front of its caller: it cannot wait.
		{map[string]any{"task_type": "echo_sync", "inputs": map[string]any{"word": "x"}, "run_in": "5m"}, "/run_at"},
	} {
		b.unchanged(func() {
			res := b.do("POST", "/tasks", tokClient, tc.body)
			require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
			require.Equal(t, []string{tc.pointer}, problemPointers(t, res), string(res.body))
		})
	}
}
