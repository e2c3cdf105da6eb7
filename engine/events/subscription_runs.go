package events

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

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

// triggeredRun is a workflow run a subscription starts for an event.
type triggeredRun struct {
	workflow, schemaName string
	inputs               json.RawMessage
	by                   wftype.RunTrigger
	key                  string
}

// planRun adds to p the run a subscription that names a workflow starts
// for p's event (task, evaluated: its inputs checked against the
// workflow's inputs schema, its start key the subscription's dedup key).
func (c *Consumer) planRun(p *planned, sub *spec.Subscription, task spec.SubscriptionTask) error {
	if c.cfg.Runs == nil {
		return fmt.Errorf("subscription %s starts runs of workflow %s, but this instance's event consumer cannot start workflow runs", sub.Name(), task.Workflow)
	}
	inputs, err := json.Marshal(task.Inputs)
	if err != nil {
		return fmt.Errorf("error encoding the inputs of subscription %s: %w", sub.Name(), err)
	}
	p.runs = append(p.runs, triggeredRun{
		workflow: task.Workflow, schemaName: task.SchemaName, inputs: inputs, key: task.DedupKey,
		by: wftype.RunTrigger{Kind: wftype.TriggerEvent, Subscription: sub.Name(), EventID: p.event.ID.String(), EventType: p.event.EventType},
	})
	return nil
}

// startRuns starts, in st's transaction (the one that deleted the events),
// the workflow runs of the events this consumer still owned, and returns
// how many it started (those whose start key a run held already are not
// counted: another consumer, or an earlier delivery, started them).
func (c *Consumer) startRuns(ctx context.Context, st *store.Store, plans []planned, owned map[uuid.UUID]bool) (int, error) {
	n := 0
	for _, p := range plans {
		if p.err != nil || !owned[p.event.ID] {
			continue
		}
		for _, r := range p.runs {
			started, err := c.cfg.Runs.StartTriggered(ctx, st, r.workflow, r.schemaName, r.inputs, r.by, r.key)
			if err != nil {
				return n, fmt.Errorf("error starting the workflow run of subscription %s: %w", r.by.Subscription, err)
			}
			if started {
				n++
			}
		}
	}
	return n, nil
}
