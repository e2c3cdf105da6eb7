package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// RunStarter starts a workflow run in the caller's transaction, once per
// start key (engine/workflow Workflows.StartTriggered): it reports false
// when a run holding key exists already.
type RunStarter interface {
	StartTriggered(ctx context.Context, tx *store.Store, workflow, schemaName string, inputs json.RawMessage,
		by wftype.RunTrigger, key string) (bool, error)
}

// errNoRunStarter refuses the tick of a workflow schedule on a scheduler
// that cannot start runs, or whose run a start key already holds.
var errNoRunStarter = errors.New("no workflow run was started for the tick: this scheduler cannot start workflow runs, or a run of the tick exists already")

// startRun starts the workflow run of a schedule's tick in st's
// transaction (the one that recorded the tick as fresh). Its start key is
// the tick's dedup key, so a tick starts one run whatever leader fires it:
// the tick's record already makes a second firing a no-op, and the key
// holds even for a record lost to a restore. It reports false when no run
// was started.
func (s *Scheduler) startRun(ctx context.Context, st *store.Store, sch *spec.Schedule, tick time.Time) (bool, error) {
	if s.cfg.Runs == nil {
		return false, nil
	}
	at := tick.UTC()
	by := wftype.RunTrigger{Kind: wftype.TriggerSchedule, Schedule: sch.Name(), Tick: &at}
	started, err := s.cfg.Runs.StartTriggered(ctx, st, sch.Workflow(), sch.SchemaName(), sch.Inputs(), by, sch.StartKey(tick))
	if err != nil {
		return false, fmt.Errorf("error starting the workflow run of schedule %s: %w", sch.Name(), err)
	}
	return started, nil
}
