package api

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfhq/wf/engine/dispatch"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// lease returns the store's form of the lease fields.
func (l leaseFields) lease() store.WorkerLease {
	return store.WorkerLease{Owner: l.OwnerID, Attempt: l.Attempt}
}

// remoteOutcome is what a remote worker reported: outputs, or an error.
type remoteOutcome struct {
	outputs json.RawMessage
	err     error
}

// finishRemote ends a task a remote worker ran. In one transaction it locks
// the task — only if it is ACTIVE under the worker's lease — decides its next
// status exactly as the dispatcher decides for a local run (COMPLETED;
// PENDING with backoff while retries remain; DEAD_LETTER; FAILED when
// permanent), and writes it with FinishTasks (which writes the task.failed
// and task.dead_lettered events in the same transaction).
func (s *Server) finishRemote(r *http.Request, p *principal, id taskID, l leaseFields, report func(*wftype.Task) remoteOutcome) (wftype.Task, error) {
	ctx := r.Context()
	if _, err := s.visibleTask(ctx, p, id); err != nil {
		return wftype.Task{}, err
	}
	var task wftype.Task
	var status wftype.TaskStatus
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		st := s.store.WithTx(tx)
		t, err := st.LockActiveTask(ctx, id.UUID, l.lease())
		if err != nil {
			return err
		}
		task = t
		out := report(&t)
		f := dispatch.Outcome(&t, dispatch.Rule{Backoff: s.backoff(t.TaskType)}, out.outputs, out.err, time.Now())
		status = f.Status
		_, err = st.FinishTasks(ctx, store.FinishParams{Owner: l.OwnerID}, []store.Finish{f})
		return err
	})
	if err != nil {
		return wftype.Task{}, s.taskNotFound(id, err)
	}
	var ran time.Duration
	if task.StartedAt != nil {
		ran = time.Since(*task.StartedAt)
	}
	s.metrics.Finished(&task, status, ran)
	t, err := s.store.GetTask(ctx, id.UUID)
	return t, s.taskNotFound(id, err)
}

// backoff is the retry delay policy of a task type (the dispatcher's
// default for a type the specs no longer declare).
func (s *Server) backoff(taskType string) func(int) time.Duration {
	tt, ok := s.cfg.Specs.TaskType(taskType)
	if !ok {
		return dispatch.DefaultBackoff
	}
	b := tt.Backoff()
	return func(n int) time.Duration { return b.Delay(n, rand.Float64()) }
}
