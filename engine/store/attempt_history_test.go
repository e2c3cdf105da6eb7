package store_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// The attempt that ends a task is not written to its attempt_log: its row
// holds it, and GetAttempts adds it (migration 024). These tests read the
// history every reader gets and, beside it, what the log stores.

// storedAttempts is how many entries task id's attempt_log stores.
func (b *bundle) storedAttempts(t *testing.T, id uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx,
		`SELECT coalesce(jsonb_array_length(attempt_log), 0) FROM tasks.tasks WHERE task_id = $1`, id).Scan(&n))
	return n
}

// attempts reads task id's history and checks that every entry holds the
// attempt, instance, outcome and error of want, in order.
func (b *bundle) attempts(t *testing.T, id uuid.UUID, want ...wantAttempt) []wftype.Attempt {
	t.Helper()
	got, err := b.store.GetAttempts(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, got, len(want), "history %+v", got)
	for i, w := range want {
		a := got[i]
		require.Equal(t, w.attempt, a.Attempt, "entry %d", i)
		require.Equal(t, w.outcome, a.Outcome, "entry %d", i)
		require.NotNil(t, a.OwnerID, "entry %d", i)
		require.Equal(t, w.owner, *a.OwnerID, "entry %d", i)
		require.NotNil(t, a.StartedAt, "entry %d", i)
		require.False(t, a.FinishedAt.IsZero(), "entry %d", i)
		if w.err == "" {
			require.Nil(t, a.Error, "entry %d", i)
		} else {
			require.NotNil(t, a.Error, "entry %d", i)
			require.Equal(t, w.err, *a.Error, "entry %d", i)
		}
	}
	return got
}

// wantAttempt is one expected entry of a history.
type wantAttempt struct {
	attempt int
	owner   string
	outcome wftype.TaskStatus
	err     string
}

// requireFromRow checks that a is the attempt task id's row describes now.
func (b *bundle) requireFromRow(t *testing.T, id uuid.UUID, a wftype.Attempt) {
	t.Helper()
	task, err := b.store.GetTask(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, task.Attempts, a.Attempt)
	require.Equal(t, task.Status, a.Outcome)
	require.Equal(t, task.OwnerID, a.OwnerID)
	require.Equal(t, task.Error, a.Error)
	require.NotNil(t, task.StartedAt)
	require.True(t, task.StartedAt.Equal(*a.StartedAt), "started %s, entry %s", task.StartedAt, a.StartedAt)
	require.NotNil(t, task.FinishedAt)
	require.True(t, task.FinishedAt.Equal(a.FinishedAt), "finished %s, entry %s", task.FinishedAt, a.FinishedAt)
}

// endedTask inserts a noop task that host runs once, to status with
// error errText ("" for none), and returns its id.
func (b *bundle) endedTask(t *testing.T, host string, status wftype.TaskStatus, errText string) uuid.UUID {
	t.Helper()
	id := b.insertOne(t, "noop")
	b.claimOne(t, host)
	f := store.Finish{ID: id, Status: status}
	if errText != "" {
		f.Error = &errText
	}
	b.finishOne(t, host, f)
	return id
}

// endedOnce is endedTask, checked: its history is the one attempt, read
// from the task's row, none of it stored.
func (b *bundle) endedOnce(t *testing.T, host string, status wftype.TaskStatus, errText string) (uuid.UUID, []wftype.Attempt) {
	t.Helper()
	id := b.endedTask(t, host, status, errText)
	got := b.attempts(t, id, wantAttempt{1, host, status, errText})
	b.requireFromRow(t, id, got[0])
	require.Zero(t, b.storedAttempts(t, id), "a single ended attempt stores none")
	return id, got
}

func TestAttemptHistoryOfOneSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.endedOnce(t, "host-a", wftype.StatusCompleted, "")
}

func TestAttemptHistoryOfRetriesThenSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.insertOne(t, "noop")
	for i, host := range []string{"host-a", "host-b"} {
		b.claimOne(t, host)
		msg := fmt.Sprintf("failure %d", i+1)
		b.finishOne(t, host, store.Finish{ID: id, Status: wftype.StatusPending, Error: &msg, RetryCount: i + 1})
	}
	b.claimOne(t, "host-c")
	b.finishOne(t, "host-c", store.Finish{ID: id, Status: wftype.StatusCompleted, RetryCount: 2})

	got := b.attempts(t, id,
		wantAttempt{1, "host-a", wftype.StatusPending, "failure 1"},
		wantAttempt{2, "host-b", wftype.StatusPending, "failure 2"},
		wantAttempt{3, "host-c", wftype.StatusCompleted, ""})
	b.requireFromRow(t, id, got[2])
	require.Equal(t, 2, b.storedAttempts(t, id), "the retries are stored, the success is not")
	require.True(t, got[0].FinishedAt.Compare(*got[1].StartedAt) <= 0)
}

func TestAttemptHistoryOfSnoozeThenFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.insertOne(t, "noop")
	b.claimOne(t, "host-a")
	b.finishOne(t, "host-a", store.Finish{ID: id, Status: wftype.StatusPending, Snoozed: true})
	b.claimOne(t, "host-b")
	boom := "boom"
	b.finishOne(t, "host-b", store.Finish{ID: id, Status: wftype.StatusFailed, Error: &boom})

	got := b.attempts(t, id,
		wantAttempt{1, "host-a", wftype.AttemptSnoozed, ""},
		wantAttempt{2, "host-b", wftype.StatusFailed, "boom"})
	b.requireFromRow(t, id, got[1])
	require.Equal(t, 1, b.storedAttempts(t, id))
}

func TestAttemptHistoryOfDeadLetterRequeueSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id, dead := b.endedOnce(t, "host-a", wftype.StatusDeadLetter, "gone for good")

	// The requeue clears the columns that held the dead-lettered attempt:
	// it is stored first, in the same write, exactly as it was read.
	_, err := b.store.RequeueTask(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, 1, b.storedAttempts(t, id))
	requeued := b.attempts(t, id, wantAttempt{1, "host-a", wftype.StatusDeadLetter, "gone for good"})
	require.Equal(t, dead, requeued)
	// A second requeue of a live task changes nothing.
	_, err = b.store.RequeueTask(b.ctx, id)
	require.ErrorIs(t, err, wftype.ErrConflict)
	require.Equal(t, 1, b.storedAttempts(t, id))

	b.claimOne(t, "host-b")
	b.finishOne(t, "host-b", store.Finish{ID: id, Status: wftype.StatusCompleted})
	got := b.attempts(t, id,
		wantAttempt{1, "host-a", wftype.StatusDeadLetter, "gone for good"},
		wantAttempt{2, "host-b", wftype.StatusCompleted, ""})
	require.Equal(t, dead[0], got[0])
	b.requireFromRow(t, id, got[1])
}

// TestAttemptHistoryOfConcurrentRequeues: requeues of one dead-lettered
// task at once store its attempt once: one requeue changes the row, the
// others find it PENDING and change nothing.
func TestAttemptHistoryOfConcurrentRequeues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.endedTask(t, "host-a", wftype.StatusDeadLetter, "gone")

	const n = 8
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			_, err := b.store.RequeueTask(b.ctx, id)
			errs <- err
		}()
	}
	close(start)
	requeued := 0
	for range n {
		select {
		case err := <-errs:
			if err == nil {
				requeued++
			} else {
				require.ErrorIs(t, err, wftype.ErrConflict)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the requeues did not return")
		}
	}
	require.Equal(t, 1, requeued)
	require.Equal(t, 1, b.storedAttempts(t, id))
	b.attempts(t, id, wantAttempt{1, "host-a", wftype.StatusDeadLetter, "gone"})
}

func TestAttemptHistoryOfCancelledRunningTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.insertOne(t, "noop")
	b.claimOne(t, "host-a")
	boom := "boom"
	b.finishOne(t, "host-a", store.Finish{ID: id, Status: wftype.StatusPending, Error: &boom, RetryCount: 1})
	b.claimOne(t, "host-b")
	_, err := b.store.CancelTask(b.ctx, id)
	require.NoError(t, err)

	// The row keeps the first attempt's error; the cancelled attempt's is
	// "cancelled", so the cancel stores its attempt.
	task, err := b.store.GetTask(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, "boom", *task.Error)
	want := []wantAttempt{
		{1, "host-a", wftype.StatusPending, "boom"},
		{2, "host-b", wftype.StatusCancelled, "cancelled"},
	}
	cancelled := b.attempts(t, id, want...)
	require.Equal(t, 2, b.storedAttempts(t, id))

	// A requeue does not store it twice (its attempt number is the task's).
	_, err = b.store.RequeueTask(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, 2, b.storedAttempts(t, id))
	require.Equal(t, cancelled, b.attempts(t, id, want...))

	// Cancelling it again while PENDING adds no attempt.
	_, err = b.store.CancelTask(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, cancelled, b.attempts(t, id, want...))
}

func TestAttemptHistoryOf25RetriesKeepsTheLast20(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, end := range []wftype.TaskStatus{wftype.StatusCompleted, wftype.StatusDeadLetter} {
		t.Run(string(end), func(t *testing.T) {
			id := b.insertOne(t, "noop")
			for i := range 25 {
				b.claimOne(t, fmt.Sprintf("host-%d", i+1))
				msg := fmt.Sprintf("failure %d", i+1)
				b.finishOne(t, "", store.Finish{ID: id, Status: wftype.StatusPending, Error: &msg, RetryCount: i + 1})
			}
			b.claimOne(t, "host-26")
			var last *string
			if end != wftype.StatusCompleted {
				msg := "failure 26"
				last = &msg
			}
			b.finishOne(t, "", store.Finish{ID: id, Status: end, Error: last, RetryCount: 25})

			want := make([]wantAttempt, 0, 20)
			for n := 7; n <= 25; n++ {
				want = append(want, wantAttempt{n, fmt.Sprintf("host-%d", n), wftype.StatusPending, fmt.Sprintf("failure %d", n)})
			}
			lastWant := wantAttempt{26, "host-26", end, ""}
			if last != nil {
				lastWant.err = *last
			}
			want = append(want, lastWant)
			got := b.attempts(t, id, want...)
			b.requireFromRow(t, id, got[19])
			require.Equal(t, 20, b.storedAttempts(t, id))
			if end == wftype.StatusCompleted {
				return
			}

			// Requeued, the task stores the last 20, the dead-lettered
			// attempt among them.
			_, err := b.store.RequeueTask(b.ctx, id)
			require.NoError(t, err)
			require.Equal(t, 20, b.storedAttempts(t, id))
			require.Equal(t, got, b.attempts(t, id, want...))
		})
	}
}

// TestAttemptHistoryOfRowsWrittenBefore024: a task whose log already ends
// with the attempt that ended it (as every completion wrote it before
// migration 024) reads the same, and a requeue does not store it twice.
func TestAttemptHistoryOfRowsWrittenBefore024(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The times are any, as PostgreSQL wrote them (an offset, microseconds).
	base := time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC)
	startedAt := func(n int) time.Time { return base.Add(time.Duration(n) * time.Minute) }
	finishedAt := func(n int) time.Time { return startedAt(n).Add(1500 * time.Millisecond) }
	entry := func(n int, outcome wftype.TaskStatus, errText string) map[string]any {
		e := map[string]any{"attempt": n, "owner_id": fmt.Sprintf("host-%d", n),
			"started_at":  startedAt(n).Format("2006-01-02T15:04:05.999999-07:00"),
			"finished_at": finishedAt(n).Format("2006-01-02T15:04:05.999999-07:00"),
			"outcome":     outcome, "error": nil}
		if errText != "" {
			e["error"] = errText
		}
		return e
	}
	// oldRow writes a task as the code before 024 left it: status, the
	// last attempt's columns, and the whole log.
	oldRow := func(status wftype.TaskStatus, errText string, log []map[string]any) uuid.UUID {
		id := b.insertOne(t, "noop")
		n := log[len(log)-1]["attempt"].(int)
		doc, err := json.Marshal(log)
		require.NoError(t, err)
		var errArg *string
		if errText != "" {
			errArg = &errText
		}
		tag, err := b.pool.Exec(b.ctx, `
UPDATE tasks.tasks
SET status = $2, attempts = $3, owner_id = $4, started_at = $5, finished_at = $6, error = $7, attempt_log = $8
WHERE task_id = $1`, id, status, n, fmt.Sprintf("host-%d", n), startedAt(n), finishedAt(n), errArg, doc)
		require.NoError(t, err)
		require.EqualValues(t, 1, tag.RowsAffected())
		return id
	}

	cases := map[string]struct {
		status wftype.TaskStatus
		err    string
		want   []wantAttempt
	}{
		"one success":            {wftype.StatusCompleted, "", []wantAttempt{{1, "host-1", wftype.StatusCompleted, ""}}},
		"retry then failure":     {wftype.StatusFailed, "bad", []wantAttempt{{1, "host-1", wftype.StatusPending, "flaky"}, {2, "host-2", wftype.StatusFailed, "bad"}}},
		"dead letter":            {wftype.StatusDeadLetter, "gone", []wantAttempt{{1, "host-1", wftype.StatusDeadLetter, "gone"}}},
		"cancelled while active": {wftype.StatusCancelled, "cancelled", []wantAttempt{{1, "host-1", wftype.StatusCancelled, "cancelled"}}},
	}
	full := make([]wantAttempt, 0, 20)
	for n := 7; n <= 25; n++ {
		full = append(full, wantAttempt{n, fmt.Sprintf("host-%d", n), wftype.StatusPending, "flaky"})
	}
	cases["20 kept"] = struct {
		status wftype.TaskStatus
		err    string
		want   []wantAttempt
	}{wftype.StatusFailed, "bad", append(full, wantAttempt{26, "host-26", wftype.StatusFailed, "bad"})}

	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			log := make([]map[string]any, len(c.want))
			for i, w := range c.want {
				log[i] = entry(w.attempt, w.outcome, w.err)
			}
			id := oldRow(c.status, c.err, log)
			got := b.attempts(t, id, c.want...)
			for i, a := range got {
				require.True(t, startedAt(c.want[i].attempt).Equal(*a.StartedAt), "entry %d", i)
				require.True(t, finishedAt(c.want[i].attempt).Equal(a.FinishedAt), "entry %d", i)
			}
			b.requireFromRow(t, id, got[len(got)-1])
			if c.status == wftype.StatusCompleted {
				return // not requeueable
			}

			_, err := b.store.RequeueTask(b.ctx, id)
			require.NoError(t, err)
			require.Equal(t, len(c.want), b.storedAttempts(t, id), "requeued, nothing is stored twice")
			require.Equal(t, got, b.attempts(t, id, c.want...))
		})
	}
}
