package execution

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// FinishLeased writes the outcome of a task that ran under lease (a worker's
// own claim, or a remote runner's that a worker ran under), in one
// transaction: it locks the task, only while it is ACTIVE under lease, lets
// decide turn the locked row into its outcome (see Outcome), and applies it
// with store.FinishTasks, which writes the task.failed and
// task.dead_lettered events in the same transaction. now stamps the write
// (nil: the database's clock). A task no longer ACTIVE under lease gives an
// error wrapping wftype.ErrConflict or wftype.ErrNotFound, and nothing is
// written.
func FinishLeased(ctx context.Context, st *store.Store, id uuid.UUID, lease store.WorkerLease, now *time.Time,
	decide func(locked *wftype.Task) store.Finish) (task wftype.Task, outcome store.Finish, err error) {
	err = st.InTx(ctx, func(tx *store.Store) error {
		t, err := tx.LockActiveTask(ctx, id, lease)
		if err != nil {
			return err
		}
		task = t
		outcome = decide(&t)
		done, err := tx.FinishTasks(ctx, store.FinishParams{Owner: lease.Owner, Now: now}, []store.Finish{outcome})
		if err != nil {
			return err
		}
		if len(done) == 0 {
			return fmt.Errorf("task %s changed while locked: %w", id, wftype.ErrConflict)
		}
		return nil
	})
	return task, outcome, err
}
