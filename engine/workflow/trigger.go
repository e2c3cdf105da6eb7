package workflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// StartTriggered starts a run of workflow for a Subscription's event or a
// Schedule's tick (by says which), in the caller's transaction tx: the
// event consumer's that deletes the event, the scheduler's that records
// the tick. key is the run's start key: a run holding it already (another
// consumer or leader started it) makes this a no-op that reports false;
// two transactions racing on one key start one run (the second waits for
// the first on the unique index, then inserts nothing). The inputs were
// checked against the workflow's inputs schema (spec.Subscription.Evaluate,
// the Schedule's compile) and are checked again here. A step task the
// client refuses fails its step, and so the run, rather than the caller's
// transaction, as in a run's later steps.
func (w *Workflows) StartTriggered(ctx context.Context, tx *store.Store, workflow, schemaName string, inputs json.RawMessage,
	by wftype.RunTrigger, key string) (bool, error) {
	if key == "" {
		return false, fmt.Errorf("error starting a run of workflow %s: no start key", workflow)
	}
	wf, raw, err := w.checkStart(StartRequest{Workflow: workflow, SchemaName: schemaName, Inputs: inputs})
	if err != nil {
		return false, err
	}
	id, _, err := store.NewID()
	if err != nil {
		return false, err
	}
	names := make([]string, 0, len(wf.Steps()))
	for _, s := range wf.Steps() {
		names = append(names, s.Name())
	}
	_, err = tx.InsertWorkflowRun(ctx, store.NewWorkflowRun{
		ID: id, Workflow: wf.Name(), SchemaName: cmp.Or(schemaName, wftype.SystemSchema), Inputs: raw, Timeout: wf.Timeout(),
		Steps: names, Now: w.cfg.Clock.DBNow(), StartedBy: &by, StartKey: key,
	})
	if errors.Is(err, store.ErrRunExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error starting a run of workflow %s: %w", wf.Name(), err)
	}
	if err := w.advance(ctx, tx, []uuid.UUID{id}, nil, false, nil); err != nil {
		return false, fmt.Errorf("error starting a run of workflow %s: %w", wf.Name(), err)
	}
	return true, nil
}
