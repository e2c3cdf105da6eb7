package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/wftype"
)

// execSpecs are the task types of the `wf exec` tests; their handlers are
// Go builtins (emit is the tests' own, see testRegistry).
const execSpecs = `kind: TaskType
name: emit
description: Reports records, optionally waiting for a gate file in between.
handler: {builtin: emit}
reporters: [database, gcs_detailed]
visibility_timeout: 5s
inputs: {type: object}
---
kind: TaskType
name: flaky
description: Fails; retried twice.
handler: {builtin: fail}
max_retries: 2
backoff: {base: 10s, factor: 2, max: 1m}
---
kind: TaskType
name: doomed
description: Fails; never retried.
handler: {builtin: fail}
max_retries: 0
`

func newExecEnv(t *testing.T) *wfEnv {
	t.Helper()
	return newWFEnv(t, map[string]string{"exec.yaml": execSpecs})
}

// execJSON runs `wf exec --format json` and decodes the task it printed.
func (e *wfEnv) execJSON(args ...string) (int, wftype.Task, string) {
	e.t.Helper()
	code, out, errOut := e.exec(append([]string{"--format", "json"}, args...)...)
	var task wftype.Task
	if out != "" {
		require.NoError(e.t, json.Unmarshal([]byte(out), &task), out)
	}
	return code, task, errOut
}

// eventsOf lists the event types written for a task.
func eventsOf(t *testing.T, st *store.Store, id uuid.UUID) []string {
	t.Helper()
	return dbtest.Strings(t, t.Context(), st.DB(), `SELECT event_type FROM tasks.events WHERE payload->>'task_id' = $1 ORDER BY created_at`, id.String())
}

func TestExecCreatesRunsAndReports(t *testing.T) {
	t.Parallel()
	e := newExecEnv(t)
	code, task, errOut := e.execJSON("emit", `{"first": 4, "then": 3}`)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, wftype.StatusCompleted, task.Status)
	require.Equal(t, 1, task.Attempts)
	require.NotEmpty(t, deref(task.OwnerID), "the worker claimed the task under its own owner id")
	var outputs struct {
		Emitted       int `json:"emitted"`
		ReportRecords int `json:"report_records"`
	}
	require.NoError(t, json.Unmarshal(task.Outputs, &outputs))
	require.Equal(t, 7, outputs.Emitted, "the handler's outputs")
	require.Equal(t, 7, outputs.ReportRecords, "the detailed report's")

	var progress struct{ Total, Succeeded, Rejected int }
	require.NoError(t, json.Unmarshal(task.Progress, &progress))
	require.Equal(t, struct{ Total, Succeeded, Rejected int }{7, 5, 2}, progress)
	requireEnvelopes(t, 7, readReport(t, task))

	// Text output names the task and its end.
	code, out, errOut := e.exec("emit", `{}`)
	require.Equal(t, ExitOK, code, errOut)
	require.Regexp(t, `^task [0-9a-f-]{36} COMPLETED\n`, out)
}

// TestExecOutcomes: a failed run ends as `wf run` would end it: a retry
// with backoff, a dead letter, or a permanent failure, with the events.
func TestExecOutcomes(t *testing.T) {
	t.Parallel()
	e := newExecEnv(t)
	st := store.New(dbtest.PoolFor(t, e.url))
	for name, tc := range map[string]struct {
		taskType, payload string
		status            wftype.TaskStatus
		retries           int
		events            []string
		stderr            string
	}{
		"Retry":      {"flaky", `{"message": "backend down"}`, wftype.StatusPending, 1, nil, "ended PENDING (retry 1 of 2 at "},
		"DeadLetter": {"doomed", `{"message": "backend down"}`, wftype.StatusDeadLetter, 0, []string{"task.dead_lettered"}, "ended DEAD_LETTER: "},
		"Permanent":  {"flaky", `{"message": "bad input", "permanent": true}`, wftype.StatusFailed, 0, []string{"task.failed"}, "ended FAILED: "},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before := clock.Now()
			code, task, errOut := e.execJSON(tc.taskType, tc.payload)
			require.Equal(t, ExitFailure, code, errOut)
			require.Contains(t, errOut, tc.stderr)
			require.Contains(t, errOut, errorOf(tc.payload))
			require.Equal(t, tc.status, task.Status)
			require.Equal(t, tc.retries, task.RetryCount)
			require.Contains(t, deref(task.Error), errorOf(tc.payload))
			if tc.status == wftype.StatusPending {
				require.Nil(t, task.OwnerID, "a retried task is free for any claimer")
				require.True(t, task.RunAfter.After(before.Add(8*time.Second)), "backoff of about 10s, got run_after %s", task.RunAfter)
			}
			require.Equal(t, tc.events, eventsOf(t, st, task.ID))
		})
	}
}

// errorOf is the message a fail payload asks for.
func errorOf(payload string) string {
	var in struct{ Message string }
	_ = json.Unmarshal([]byte(payload), &in)
	return in.Message
}

// claimAs claims task id as a dispatcher named owner would (batched claim).
func claimAs(t *testing.T, st *store.Store, owner string, taskType string) wftype.Task {
	t.Helper()
	tasks, err := st.ClaimTasks(t.Context(), store.ClaimParams{Owner: owner, Total: 1,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: taskType, Max: 1, Lease: time.Minute}}})
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	return tasks[0]
}

func TestExecTaskID(t *testing.T) {
	t.Parallel()
	e := newExecEnv(t)
	st := store.New(dbtest.PoolFor(t, e.url))

	t.Run("PendingIsClaimed", func(t *testing.T) {
		id := e.enqueue("emit", map[string]any{"first": 2})
		code, task, errOut := e.execJSON("--task-id", id.String())
		require.Equal(t, ExitOK, code, errOut)
		require.Equal(t, id, task.ID)
		require.Equal(t, wftype.StatusCompleted, task.Status)
		require.Equal(t, 1, task.Attempts)
		requireEnvelopes(t, 2, readReport(t, task))
	})

	t.Run("ActiveNeedsItsLease", func(t *testing.T) {
		id := e.enqueue("emit", map[string]any{"first": 1})
		claimed := claimAs(t, st, "engine-a", "emit")
		require.Equal(t, id, claimed.ID)
		for _, args := range [][]string{
			{},                         // no lease
			{"--owner-id", "engine-b"}, // another owner
			{"--owner-id", "engine-a", "--attempt", "2"}, // a later attempt
		} {
			code, _, errOut := e.exec(append(args, "--task-id", id.String())...)
			require.Equal(t, ExitFailure, code, "args %v: %s", args, errOut)
			cur, err := st.GetTask(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, wftype.StatusActive, cur.Status, "args %v", args)
			require.Equal(t, "engine-a", deref(cur.OwnerID))
		}
		code, task, errOut := e.execJSON("--owner-id", "engine-a", "--attempt", "1", "--task-id", id.String())
		require.Equal(t, ExitOK, code, errOut)
		require.Equal(t, wftype.StatusCompleted, task.Status)
		require.Equal(t, "engine-a", deref(task.OwnerID), "the worker ran under the dispatcher's claim")
		require.Equal(t, 1, task.Attempts)
	})

	t.Run("Ended", func(t *testing.T) {
		code, done, errOut := e.execJSON("emit", `{}`)
		require.Equal(t, ExitOK, code, errOut)
		code, again, errOut := e.execJSON("--task-id", done.ID.String())
		require.Equal(t, ExitOK, code, "an already COMPLETED task is success: %s", errOut)
		require.Equal(t, done.FinishedAt, again.FinishedAt, "nothing ran again")

		code, failed, _ := e.execJSON("flaky", `{"permanent": true}`)
		require.Equal(t, ExitFailure, code)
		code, _, errOut = e.exec("--task-id", failed.ID.String())
		require.Equal(t, ExitFailure, code)
		require.Contains(t, errOut, "has already ended: it is FAILED")
	})

	t.Run("Unknown", func(t *testing.T) {
		code, _, errOut := e.exec("--task-id", uuid.Must(uuid.NewV7()).String())
		require.Equal(t, ExitFailure, code)
		require.Contains(t, errOut, "not found")
	})
}

func TestExecUsage(t *testing.T) {
	t.Parallel()
	e := newExecEnv(t)
	for name, args := range map[string][]string{
		"NoArguments":     {},
		"Both":            {"--task-id", uuid.NewString(), "emit"},
		"BadID":           {"--task-id", "nope"},
		"BadPayload":      {"emit", `[1]`},
		"TooMany":         {"emit", `{}`, "more"},
		"NegativeAttempt": {"--task-id", uuid.NewString(), "--owner-id", "o", "--attempt", "-1"},
	} {
		code, _, errOut := e.exec(args...)
		require.Equal(t, ExitUsage, code, "%s: %s", name, errOut)
	}
	code, _, errOut := e.exec("emit", `{"first": "x"}`)
	require.Equal(t, ExitFailure, code, "a failing run is not a usage error: %s", errOut)
	code, _, errOut = e.exec("nosuchtype", `{}`)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "unknown task type")
}

// TestExecStopped: a worker stopped mid-run (SIGTERM) hands a task it
// claimed itself back to PENDING at once, and leaves a task it ran under a
// remote runner's claim to that runner.
func TestExecStopped(t *testing.T) {
	t.Parallel()
	e := newExecEnv(t)
	st := store.New(dbtest.PoolFor(t, e.url))
	gate := filepath.Join(t.TempDir(), "never")

	run := func(args ...string) (uuid.UUID, int) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var errOut inproc.Buffer
		done := make(chan int, 1)
		go func() {
			done <- MainWith(ctx, append(e.global(), append([]string{"exec", "--heartbeat-interval", "200ms"}, args...)...), &bytes.Buffer{}, &errOut, e.opts)
		}()
		var id uuid.UUID
		require.Eventually(t, func() bool {
			active, err := st.ListTasks(t.Context(), store.TaskFilter{Statuses: []wftype.TaskStatus{wftype.StatusActive}})
			require.NoError(t, err)
			for _, a := range active {
				var p map[string]any
				if json.Unmarshal(a.Progress, &p) == nil && p["total"] == float64(1) {
					id = a.ID
					return true
				}
			}
			return false
		}, 30*time.Second, 20*time.Millisecond, "the run never reported its first record")
		cancel()
		code := <-done
		require.Contains(t, errOut.String(), "stopped before the task ended")
		return id, code
	}

	id, code := run("emit", `{"first": 1, "then": 1, "gate": "`+gate+`"}`)
	require.Equal(t, ExitFailure, code)
	task, err := st.GetTask(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusPending, task.Status, "handed back")
	require.Equal(t, 0, task.Attempts, "a handed-back attempt is not counted")
	require.Equal(t, 0, task.RetryCount)

	// A fresh task, claimed by a dispatcher and run under its claim.
	require.NoError(t, st.InTx(t.Context(), func(tx *store.Store) error {
		_, err := tx.DB().Exec(t.Context(), `UPDATE tasks.tasks SET status = 'CANCELLED' WHERE task_id = $1 AND "timestamp" = $2`, id, store.IDTime(id))
		return err
	}))
	id = e.enqueue("emit", map[string]any{"first": 1, "then": 1, "gate": gate})
	claimed := claimAs(t, st, "engine-c", "emit")
	require.Equal(t, id, claimed.ID)
	_, code = run("--owner-id", "engine-c", "--task-id", id.String())
	require.Equal(t, ExitFailure, code)
	task, err = st.GetTask(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, wftype.StatusActive, task.Status, "left to the runner that claimed it")
	require.Equal(t, "engine-c", deref(task.OwnerID))
}

// TestExecLeaseLost: a task cancelled while the worker runs it stops the
// worker, whose result is dropped.
func TestExecLeaseLost(t *testing.T) {
	t.Parallel()
	e := newExecEnv(t)
	st := store.New(dbtest.PoolFor(t, e.url))
	id := e.enqueue("emit", map[string]any{"first": 1, "then": 1, "gate": filepath.Join(t.TempDir(), "never")})
	done := make(chan struct{})
	var code int
	var errOut string
	go func() {
		defer close(done)
		code, _, errOut = e.exec("--task-id", id.String())
	}()
	e.waitProgress(id, 1)
	_, err := st.CancelTask(t.Context(), id)
	require.NoError(t, err)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop after its task was cancelled")
	}
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "lost the task's lease")
	require.Equal(t, wftype.StatusCancelled, e.show(id).Status)
}

// TestExecRunsWebhookDelivery: wf exec runs a webhook_delivery task with
// the catalog's handler bound to the database at start-up, so a remote
// worker delivers the event (one signed POST) and the task COMPLETES. The
// handler used to find its dependencies only in wf run's context: under
// wf exec every attempt failed until the task dead-lettered.
// TestExecRunsWebhookDelivery: wf exec runs a webhook delivery that wf
// created, signed with the subscriber's secret; it does not create one.
func TestExecRunsWebhookDelivery(t *testing.T) {
	t.Parallel()
	events, err := os.ReadFile("../specs/events.yaml")
	require.NoError(t, err)
	e := newWFEnv(t, map[string]string{"events.yaml": string(events)})
	const secret = "0123456789abcdef"
	var mu sync.Mutex
	var calls, verified int
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := webhooks.Verify([]byte(secret), r.Header.Get(webhooks.HeaderTimestamp), r.Header.Get(webhooks.HeaderSignature),
			body, clock.Now(), webhooks.DefaultTolerance)
		mu.Lock()
		calls++
		if err == nil {
			verified++
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	st := store.New(dbtest.PoolFor(t, e.url))
	sub, err := st.InsertWebhookSubscriber(t.Context(), store.NewWebhookSubscriber{URL: recv.URL, Secret: secret, EventTypes: []string{"catalog.*"}})
	require.NoError(t, err)

	inputs := `{"subscriber_id": "` + sub.ID.String() + `", "event_id": "e1", "event_type": "catalog.created", "payload": {}}`
	// wf exec does not create the type (only wf itself does, api.create:
	// []), nothing is written ...
	code, _, errOut := e.execJSON(webhooks.TaskTypeWebhookDelivery, inputs)
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, "is created only by wf itself")
	var n int
	require.NoError(t, st.DB().QueryRow(t.Context(), `SELECT count(*) FROM tasks.tasks`).Scan(&n))
	require.Zero(t, n)
	// ... but runs one that wf created (its event_dispatch does so).
	res, err := st.InsertTasks(t.Context(), []store.NewTask{{SchemaName: "system", Scope: wftype.ScopeSystem, ExecutionMode: wftype.ModeAsync,
		TaskType: webhooks.TaskTypeWebhookDelivery, Inputs: json.RawMessage(inputs), MaxRetries: 3}})
	require.NoError(t, err)
	code, task, errOut := e.execJSON("--task-id", res[0].Task.ID.String())
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, wftype.StatusCompleted, task.Status, deref(task.Error))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, calls, "one POST")
	require.Equal(t, 1, verified, "signed with the subscriber's secret")
}
