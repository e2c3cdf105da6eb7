package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// claimAs claims every due task of type tenant_job for owner, as the engine
// does before handing a task to a remote worker.
// claimAs claims the due tenant_job tasks as instance owner and hands them
// to a remote runner, as a dispatcher does with a remote runner's tasks
// (store.MarkRemoteRun): a worker may then report on them under that claim.
func (b *bundle) claimAs(owner string) []wftype.Task {
	b.t.Helper()
	tasks := b.claimLocal(owner)
	for _, t := range tasks {
		require.NoError(b.t, b.store.MarkRemoteRun(b.ctx, t.ID, store.WorkerLease{Owner: owner, Attempt: t.Attempts}))
	}
	return tasks
}

// claimLocal claims the due tenant_job tasks as instance owner, to run
// them itself (a local runner): no worker's to finish.
func (b *bundle) claimLocal(owner string) []wftype.Task {
	b.t.Helper()
	later := clock.Now().Add(time.Hour)
	tasks, err := b.store.ClaimTasks(b.ctx, store.ClaimParams{Owner: owner, Total: 10, Now: &later,
		Slots: []store.ClaimSlot{{Mode: wftype.ModeAsync, TaskType: "tenant_job", Max: 10, Lease: time.Minute}}})
	require.NoError(b.t, err)
	return tasks
}

// claimedJob enqueues a tenant_job of s_cat_a and claims it as owner: for
// a remote worker (claimAs), or, not remote, to run it itself
// (claimLocal). It is the task as claimed.
func (b *bundle) claimedJob(owner string, remote bool) wftype.Task {
	b.t.Helper()
	b.enqueueTenantJob("s_cat_a")
	claim := b.claimLocal
	if remote {
		claim = b.claimAs
	}
	tasks := claim(owner)
	require.Len(b.t, tasks, 1)
	return tasks[0]
}

func (b *bundle) enqueueTenantJob(schema string) string {
	b.t.Helper()
	res := b.do("POST", "/tasks", tokAdmin, map[string]any{"task_type": "tenant_job", "schema_name": schema})
	require.Equal(b.t, http.StatusAccepted, res.status, string(res.body))
	return res.json(b.t)["task_id"].(string)
}

func TestRemoteWorker(t *testing.T) {
	t.Parallel()
	b := setupTenants(t)
	id := b.enqueueTenantJob("s_cat_a")
	otherID := b.enqueueTenantJob("s_cat_b")

	// Not ACTIVE yet: no worker may write.
	b.unchanged(func() {
		res := b.do("POST", "/tasks/"+id+"/progress", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": 1, "progress": map[string]any{"done": 1}})
		require.Equal(t, http.StatusConflict, res.status, string(res.body))
	})
	require.Len(t, b.claimAs("remote-1"), 2)

	// The worker sees its lease on the task.
	task := b.do("GET", "/tasks/"+id, tokWorkerLimited, nil).json(t)
	require.Equal(t, "remote-1", task["owner_id"])
	require.Equal(t, float64(1), task["attempts"])

	// Progress: only under the lease.
	b.unchanged(func() {
		for _, body := range []map[string]any{
			{"owner_id": "someone-else", "attempt": 1, "progress": map[string]any{"done": 1}},
			{"owner_id": "remote-1", "attempt": 2, "progress": map[string]any{"done": 1}},
		} {
			res := b.do("POST", "/tasks/"+id+"/progress", tokWorker, body)
			require.Equal(t, http.StatusConflict, res.status, string(res.body))
		}
		// A worker limited to cat-a never sees cat-b's task.
		res := b.do("POST", "/tasks/"+otherID+"/progress", tokWorkerLimited, map[string]any{"owner_id": "remote-1", "attempt": 1, "progress": map[string]any{}})
		require.Equal(t, http.StatusNotFound, res.status)
		for _, bad := range []any{
			map[string]any{"progress": map[string]any{"done": 1}},
			map[string]any{"owner_id": "remote-1", "progress": []int{1}},
			map[string]any{"owner_id": "remote-1"},
			map[string]any{"owner_id": "remote-1", "progress": map[string]any{}, "eta": 3},
			map[string]any{"owner_id": "remote-1", "attempt": -1, "progress": map[string]any{}},
			map[string]any{"owner_id": "remote-1", "progress": map[string]any{}}, // the attempt is required
			`{"owner_id": "remote-1", "progress": {`,
		} {
			res := b.do("POST", "/tasks/"+id+"/progress", tokWorker, bad)
			require.Equal(t, http.StatusBadRequest, res.status, string(res.body))
		}
		res = b.do("POST", "/tasks/"+uuid.Must(uuid.NewV7()).String()+"/progress", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": 1, "progress": map[string]any{}})
		require.Equal(t, http.StatusNotFound, res.status)
	})
	res := b.do("POST", "/tasks/"+id+"/progress", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": 1, "progress": map[string]any{"done": 10, "total": 20}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	res = b.do("POST", "/tasks/"+id+"/progress", tokWorkerLimited, map[string]any{"owner_id": "remote-1", "attempt": 1, "progress": map[string]any{"done": 20}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, map[string]any{"done": float64(20), "total": float64(20)}, res.json(t)["progress"])

	// A failure with retries left goes back to PENDING with a backoff.
	res = b.do("POST", "/tasks/"+id+"/fail", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": 1, "error": "disk full"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	task = res.json(t)
	require.Equal(t, "PENDING", task["status"])
	require.Equal(t, float64(1), task["retry_count"])
	require.Equal(t, "disk full", task["error"])

	// Second attempt: a worker of the first attempt is fenced off.
	claimed := b.claimAs("remote-1")
	require.Len(t, claimed, 1)
	require.Equal(t, 2, claimed[0].Attempts)
	b.unchanged(func() {
		res = b.do("POST", "/tasks/"+id+"/complete", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": 1, "outputs": map[string]any{"ok": true}})
		require.Equal(t, http.StatusConflict, res.status)
	})
	res = b.do("POST", "/tasks/"+id+"/complete", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": 2, "outputs": map[string]any{"ok": true}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	task = res.json(t)
	require.Equal(t, "COMPLETED", task["status"])
	require.Equal(t, map[string]any{"ok": true}, task["outputs"])
	b.unchanged(func() {
		res = b.do("POST", "/tasks/"+id+"/complete", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": 2})
		require.Equal(t, http.StatusConflict, res.status)
	})

	// The other task fails twice: retries exhausted → DEAD_LETTER.
	for i, want := range []string{"PENDING", "DEAD_LETTER"} {
		res = b.do("POST", "/tasks/"+otherID+"/fail", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": i + 1, "error": "boom"})
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Equal(t, want, res.json(t)["status"])
		b.claimAs("remote-1")
	}

	// A permanent failure is FAILED at once.
	third := b.enqueueTenantJob("s_cat_a")
	b.claimAs("remote-2")
	res = b.do("POST", "/tasks/"+third+"/fail", tokWorker, map[string]any{"owner_id": "remote-2", "attempt": 1, "error": "bad input", "permanent": true})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "FAILED", res.json(t)["status"])

	var failed, dead int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FILTER (WHERE event_type = 'task.failed'),
		count(*) FILTER (WHERE event_type = 'task.dead_lettered') FROM tasks.events`).Scan(&failed, &dead))
	require.Equal(t, 1, failed)
	require.Equal(t, 1, dead)

	// Admin: the dead letter is listed, then requeued.
	page := b.do("GET", "/admin/dead-letters", tokAdmin, nil).json(t)
	require.Equal(t, "tasks", page["kind"])
	items := page["items"].([]any)
	require.Len(t, items, 1)
	require.Equal(t, otherID, items[0].(map[string]any)["task_id"])
	res = b.do("POST", "/admin/tasks/"+otherID+"/requeue", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "PENDING", res.json(t)["status"])
	require.Equal(t, float64(0), res.json(t)["retry_count"])
	b.unchanged(func() {
		res = b.do("POST", "/admin/tasks/"+otherID+"/requeue", tokAdmin, nil)
		require.Equal(t, http.StatusConflict, res.status)
		res = b.do("POST", "/admin/tasks/"+uuid.Must(uuid.NewV7()).String()+"/requeue", tokAdmin, nil)
		require.Equal(t, http.StatusNotFound, res.status)
	})
	require.Empty(t, b.do("GET", "/admin/dead-letters?kind=tasks", tokAdmin, nil).json(t)["items"])
}

// TestWorkerTokenLimitedToTaskTypes: a worker token limited to task types
// reports on no task of another type; such a task is not found for it.
func TestWorkerTokenLimitedToTaskTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a", "roads")
	task := b.claimedJob("remote-1", true)
	id, attempt := task.ID.String(), task.Attempts
	b.unchanged(func() {
		for _, op := range []struct {
			path string
			body map[string]any
		}{
			{"/progress", map[string]any{"owner_id": "remote-1", "attempt": attempt, "progress": map[string]any{"done": 1}}},
			{"/complete", map[string]any{"owner_id": "remote-1", "attempt": attempt, "outputs": map[string]any{}}},
			{"/fail", map[string]any{"owner_id": "remote-1", "attempt": attempt, "error": "x"}},
		} {
			res := b.do("POST", "/tasks/"+id+op.path, tokWorkerSleep, op.body)
			require.Equal(t, http.StatusNotFound, res.status, string(res.body))
		}
		require.Equal(t, http.StatusNotFound, b.do("GET", "/tasks/"+id, tokWorkerSleep, nil).status)
	})
	// Nor does it list them: GET /tasks shows it its types' tasks only,
	// whatever it asks for.
	for _, q := range []string{"", "?task_type=tenant_job", "?task_type=tenant_job,sleep", "?schema_name=s_cat_a"} {
		res := b.do("GET", "/tasks"+q, tokWorkerSleep, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		require.Empty(t, res.json(t)["items"], q)
	}
	require.Len(t, b.do("GET", "/tasks?task_type=tenant_job", tokWorker, nil).json(t)["items"], 1)
	// The unlimited worker token reports as before.
	res := b.do("POST", "/tasks/"+id+"/progress", tokWorker, map[string]any{"owner_id": "remote-1", "attempt": attempt, "progress": map[string]any{"done": 1}})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
}

// TestWorkerOnlyFinishesRemoteRuns: a worker completes or fails only a task
// the dispatcher handed to a remote runner, under that very claim. A task
// an instance runs itself (a local runner) is not a worker's to finish,
// even with the right owner and attempt; nor is a later local claim of a
// task that was a remote run before. The task is left as it was.
func TestWorkerOnlyFinishesRemoteRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createCatalog("cat-a", "roads")
	claimed := b.claimedJob("instance-1", false)
	local := claimed.ID.String()
	lease := map[string]any{"owner_id": "instance-1", "attempt": claimed.Attempts}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range lease {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	b.unchanged(func() {
		res := b.do("POST", "/tasks/"+local+"/complete", tokWorker, with(map[string]any{"outputs": map[string]any{"forged": true}}))
		require.Equal(t, http.StatusConflict, res.status, string(res.body))
		require.Contains(t, string(res.body), "not a remote run")
		res = b.do("POST", "/tasks/"+local+"/fail", tokWorker, with(map[string]any{"error": "forged", "permanent": true}))
		require.Equal(t, http.StatusConflict, res.status, string(res.body))
	})
	task, err := b.store.GetTask(b.ctx, uuid.MustParse(local))
	require.NoError(t, err)
	require.Equal(t, wftype.StatusActive, task.Status)
	// Progress under the claim is taken (an HTTP runner's endpoint reports
	// its counts so).
	res := b.do("POST", "/tasks/"+local+"/progress", tokWorker, with(map[string]any{"progress": map[string]any{"done": 1}}))
	require.Equal(t, http.StatusOK, res.status, string(res.body))

	// A remote run that failed and was then claimed again by the same
	// instance to run itself: the remote worker's claim is over.
	remote := b.claimedJob("instance-2", true).ID.String()
	res = b.do("POST", "/tasks/"+remote+"/fail", tokWorker, map[string]any{"owner_id": "instance-2", "attempt": 1, "error": "flaky"})
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	require.Equal(t, "PENDING", res.json(t)["status"])
	second := b.claimLocal("instance-2")
	require.Len(t, second, 1)
	require.Equal(t, 2, second[0].Attempts)
	b.unchanged(func() {
		for _, attempt := range []int{1, 2} {
			res := b.do("POST", "/tasks/"+remote+"/complete", tokWorker, map[string]any{"owner_id": "instance-2", "attempt": attempt})
			require.Equal(t, http.StatusConflict, res.status, string(res.body))
		}
	})
	var records int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.remote_runs`).Scan(&records))
	require.Zero(t, records, "a finished remote run's record is removed")
}
