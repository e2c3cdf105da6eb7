package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/execution"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// lease returns the store's form of the lease fields.
func (l leaseFields) lease() store.WorkerLease {
	return store.WorkerLease{Owner: l.OwnerID, Attempt: l.Attempt}
}

// remoteLease is the lease a worker finishes a task under: the claim must
// also be one the dispatcher handed to a remote runner, so a task the local
// dispatcher (or a SYNCHRONOUS request) runs is not a worker's to finish.
func (l leaseFields) remoteLease() store.WorkerLease {
	return store.WorkerLease{Owner: l.OwnerID, Attempt: l.Attempt, Remote: true}
}

// remoteOutcome is what a remote worker reported: outputs, or an error.
type remoteOutcome struct {
	outputs json.RawMessage
	err     error
}

// finishRemote ends a task a remote worker ran. In one transaction it locks
// the task — only if it is ACTIVE under the worker's lease (owner and
// attempt), a claim the dispatcher handed to a remote runner — decides its next
// status exactly as the dispatcher decides for a local run (COMPLETED;
// PENDING with backoff while retries remain; DEAD_LETTER; FAILED when
// permanent), and writes it with FinishTasks (which writes the task.failed
// and task.dead_lettered events in the same transaction); see
// execution.FinishLeased. It answers 200 with the task as it became.
func (s *Server) finishRemote(w http.ResponseWriter, r *http.Request, p *principal, id taskID, l leaseFields, out remoteOutcome) error {
	ctx := r.Context()
	if _, err := s.visibleTask(ctx, p, id); err != nil {
		return err
	}
	task, f, err := execution.FinishLeased(ctx, s.store, id.UUID, l.remoteLease(), nil, func(t *wftype.Task) store.Finish {
		return execution.Outcome(t, s.cfg.Rules.For(t), out.outputs, out.err, clock.Now())
	})
	if err != nil {
		return s.taskNotFound(id, err)
	}
	if err := s.store.ForgetRemoteRun(ctx, id.UUID); err != nil {
		// Harmless: the record names a claim that ended; maintenance
		// removes it.
		s.log.Warn("error forgetting a finished remote run", "task_id", id.UUID, "error", err)
	}
	var ran time.Duration
	if task.StartedAt != nil {
		ran = clock.Now().Sub(*task.StartedAt)
	}
	s.metrics.Finished(&task, f.Status, ran)
	execution.LogOutcome(ctx, s.log, &task, f, "worker", l.OwnerID)
	t, err := s.store.GetTask(ctx, id.UUID)
	if err != nil {
		return s.taskNotFound(id, err)
	}
	writeJSON(w, http.StatusOK, s.newTaskView(t, p))
	return nil
}
