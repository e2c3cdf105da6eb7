package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/inproc"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
)

// perInstanceSpecs: a SYNCHRONOUS type of one run at a time per instance,
// whose tasks run in front of an API caller or, enqueued, on the
// dispatcher; and a type with no limit that marks a claim.
const perInstanceSpecs = `kind: TaskType
name: held_one
description: Runs until the test lets it end; one at a time in an instance.
execution_mode: SYNCHRONOUS
api: {create: [client, admin]}
handler: {builtin: held}
concurrency: {per_instance: 1}
---
kind: TaskType
name: marker
description: Ends at once; its run shows that a claim after it was queued was made.
handler: {builtin: noop}
`

// heldRuns is the "held" handler: each run says it started, then waits
// until the test releases it; it records how many ran at once.
type heldRuns struct {
	mu      sync.Mutex
	running int
	peak    int
	started chan uuid.UUID
	release chan struct{}
}

func (h *heldRuns) run(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	h.mu.Lock()
	h.running++
	h.peak = max(h.peak, h.running)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.running--
		h.mu.Unlock()
	}()
	h.started <- task.ID
	select {
	case <-h.release:
		return json.RawMessage(`{}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// mostAtOnce is the most runs of the held type that ran at once.
func (h *heldRuns) mostAtOnce() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak
}

// perInstanceRun is wf run serving its API, with the held handler.
type perInstanceRun struct {
	t     *testing.T
	e     *wfEnv
	h     *heldRuns
	base  string
	token string
	log   fmt.Stringer
}

// startPerInstanceRun starts wf run (dispatcher and API in one process)
// over perInstanceSpecs.
func startPerInstanceRun(t *testing.T) *perInstanceRun {
	t.Helper()
	r := &perInstanceRun{t: t, h: &heldRuns{started: make(chan uuid.UUID, 4), release: make(chan struct{})},
		token: "perinstance-admin-token-0123"}
	r.e = newWFEnv(t, map[string]string{"perinstance.yaml": perInstanceSpecs})
	require.NoError(t, r.e.opts.Registry.Register("held", r.h.run))
	addr := inproc.FreeAddr(t)
	cfg := fmt.Sprintf("database_url: %q\ndata_dir: %q\nspecs: [%q]\nlog_format: json\nlog_level: warn\n"+
		"tokens:\n  - {name: admin, role: admin, token: %q}\n", r.e.url, r.e.data, r.e.specs, r.token)
	require.NoError(t, os.WriteFile(r.e.config, []byte(cfg), 0o600))
	r.log = inproc.Start(t, "wf run", func(ctx context.Context, stdout, stderr io.Writer) int {
		return MainWith(ctx, append(r.e.global(), "run", "--listen", addr, "--poll-interval", "100ms",
			"--heartbeat-interval", "300ms", "--grace", "5s"), stdout, stderr, r.e.opts)
	})
	r.base = "http://" + addr
	inproc.WaitReady(t, r.base, r.log)
	return r
}

// waitStart waits for a run of the held type to start and returns its task.
func (r *perInstanceRun) waitStart(what string) uuid.UUID {
	r.t.Helper()
	select {
	case id := <-r.h.started:
		return id
	case <-time.After(60 * time.Second):
		r.t.Fatalf("%s never started; wf run said: %s", what, r.log)
		return uuid.Nil
	}
}

// syncAnswer is the answer to a synchronous run's request.
type syncAnswer struct {
	status     int
	retryAfter string
	body       string
}

// syncRun posts a synchronous run of the held type; its answer comes on
// the channel (the request waits while the run does).
func (r *perInstanceRun) syncRun() <-chan syncAnswer {
	return r.syncRunBody(`{"task_type": "held_one", "inputs": {}}`)
}

// syncRunBody is syncRun with body as the request's.
func (r *perInstanceRun) syncRunBody(body string) <-chan syncAnswer {
	out := make(chan syncAnswer, 1)
	go func() {
		req, err := http.NewRequest("POST", r.base+"/tasks", strings.NewReader(body))
		if err != nil {
			out <- syncAnswer{body: err.Error()}
			return
		}
		req.Header.Set("Authorization", "Bearer "+r.token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- syncAnswer{body: err.Error()}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		out <- syncAnswer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), body: string(b)}
	}()
	return out
}

// TestRunSharesPerInstanceWithSyncRuns: under wf run, which serves the API
// beside its dispatcher, concurrency.per_instance counts the runs of both
// in one count. They used to count apart, and a type with per_instance 1
// ran twice at once in one instance.
func TestRunSharesPerInstanceWithSyncRuns(t *testing.T) {
	t.Parallel()
	// While the dispatcher runs the type's one allowed task, a synchronous
	// request of the type answers 429 (Retry-After 1) and creates nothing.
	t.Run("dispatcher first", func(t *testing.T) {
		t.Parallel()
		r := startPerInstanceRun(t)
		queued := r.e.enqueue("held_one", map[string]any{})
		require.Equal(t, queued, r.waitStart("the queued task"))
		select {
		case a := <-r.syncRun():
			require.Equal(t, http.StatusTooManyRequests, a.status, a.body)
			require.Equal(t, "1", a.retryAfter)
			require.Contains(t, a.body, "concurrency.per_instance")
		case id := <-r.h.started:
			r.h.release <- struct{}{}
			r.h.release <- struct{}{}
			t.Fatalf("a synchronous run (task %s) started while the dispatcher ran the type's one allowed task", id)
		}
		var n int
		require.NoError(t, dbtest.PoolFor(t, r.e.url).QueryRow(t.Context(),
			`SELECT count(*) FROM tasks.tasks WHERE task_type = 'held_one'`).Scan(&n))
		require.Equal(t, 1, n, "the refused request created nothing")
		r.h.release <- struct{}{}
		require.Equal(t, wftype.StatusCompleted, r.e.waitEnded(queued).Status)
		require.Equal(t, 1, r.h.mostAtOnce(), "runs of a type with per_instance 1 that ran at once")
	})
	// While a synchronous run holds the slot, the dispatcher leaves a
	// queued task of the type PENDING (a claim made after it was queued
	// ran another type's task), and starts it once the synchronous run
	// ended.
	t.Run("synchronous run first", func(t *testing.T) {
		t.Parallel()
		r := startPerInstanceRun(t)
		answered := r.syncRun()
		var syncTask uuid.UUID
		select {
		case syncTask = <-r.h.started:
		case a := <-answered:
			t.Fatalf("the synchronous run did not run: %d %s", a.status, a.body)
		case <-time.After(60 * time.Second):
			t.Fatalf("the synchronous run never started; wf run said: %s", r.log)
		}
		queued := r.e.enqueue("held_one", map[string]any{})
		// The marker is queued after the held task: the claim that takes
		// it sees the held task due too, with the dispatcher's slots free.
		r.e.waitEnded(r.e.enqueue("marker", map[string]any{}))
		if status := r.e.show(queued).Status; status != wftype.StatusPending {
			r.h.release <- struct{}{}
			r.h.release <- struct{}{}
			t.Fatalf("the dispatcher claimed a task of the type (now %s) while a synchronous run held its one slot", status)
		}
		r.h.release <- struct{}{}
		a := <-answered
		require.Equal(t, http.StatusOK, a.status, a.body)
		require.Contains(t, a.body, syncTask.String())
		require.Equal(t, queued, r.waitStart("the queued task, once the synchronous run ended"))
		r.h.release <- struct{}{}
		require.Equal(t, wftype.StatusCompleted, r.e.waitEnded(queued).Status)
		require.Equal(t, 1, r.h.mostAtOnce(), "runs of a type with per_instance 1 that ran at once")
	})
}

// TestSyncDuplicateAnsweredWhileTheDispatcherRunsIt: a synchronous request
// whose dedup key a live task holds runs nothing and is answered with that
// task, also when that task is the dispatcher's run that fills the type's
// concurrency.per_instance (one count for both): it was refused with 429.
func TestSyncDuplicateAnsweredWhileTheDispatcherRunsIt(t *testing.T) {
	t.Parallel()
	r := startPerInstanceRun(t)
	path := filepath.Join(t.TempDir(), "inputs.json")
	require.NoError(t, os.WriteFile(path, []byte(`{}`), 0o644))
	queued := r.e.runID("task_id", "enqueue", "--json", path, "--format", "json", "--dedup-key", "one-key", "held_one")
	require.Equal(t, queued, r.waitStart("the queued task"))

	answer := r.syncRunBody(`{"task_type": "held_one", "inputs": {}, "dedup_key": "one-key"}`)
	var a syncAnswer
	select {
	case a = <-answer:
	case id := <-r.h.started:
		r.h.release <- struct{}{}
		r.h.release <- struct{}{}
		t.Fatalf("a duplicate request ran task %s", id)
	case <-time.After(60 * time.Second):
		r.h.release <- struct{}{}
		t.Fatalf("the duplicate request was not answered; wf run said: %s", r.log)
	}
	r.h.release <- struct{}{}
	require.Equal(t, wftype.StatusCompleted, r.e.waitEnded(queued).Status)
	require.Equal(t, http.StatusOK, a.status, "the duplicate should be answered with the live task: %s", a.body)
	require.Contains(t, a.body, queued.String())
}
