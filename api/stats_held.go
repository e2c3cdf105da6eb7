package api

import (
	"context"
	"sort"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/wftype"
)

// heldView is a count of PENDING tasks of one type and tenant that wait for
// one reason (schema Stats.held): not_due, paused, concurrency_global,
// concurrency_per_tenant, rate_limit or not_served.
type heldView struct {
	Reason     string `json:"reason"`
	TaskType   string `json:"task_type"`
	SchemaName string `json:"schema_name"`
	Count      int64  `json:"count"`
}

// heldCounts counts the overview's PENDING tasks that are held, by reason,
// type and tenant, in the order a task's waiting_reason gives them: not
// due yet (the PENDING count less the due count, both from the snapshot),
// paused (the due tasks of a paused type or tenant), else held by a limit of
// its type (store.HeldTasks, the statement behind wf_tasks_held, live),
// else not served by any live instance (store.NotServedHeld).
// Only the tenants of sc are counted.
func (s *Server) heldCounts(ctx context.Context, o store.Overview, sc scope) ([]heldView, error) {
	out := []heldView{}
	type key struct{ taskType, schema string }
	due := map[key]int64{}
	for _, a := range o.OldestPending {
		due[key{a.TaskType, a.SchemaName}] = a.Due
	}
	pausedType, pausedTenant := map[string]bool{}, map[string]bool{}
	for _, p := range o.Paused {
		if p.Kind == store.PauseTenant {
			pausedTenant[p.Name] = true
		} else {
			pausedType[p.Name] = true
		}
	}
	paused := func(k key) bool { return pausedType[k.taskType] || pausedTenant[k.schema] }
	for _, c := range o.Counts {
		k := key{c.TaskType, c.SchemaName}
		if c.Status != wftype.StatusPending || !sc.has(k.schema) {
			continue
		}
		if n := c.Count - due[k]; n > 0 {
			out = append(out, heldView{Reason: store.WaitingNotDue, TaskType: k.taskType, SchemaName: k.schema, Count: n})
		}
		if n := due[k]; n > 0 && paused(k) {
			out = append(out, heldView{Reason: store.WaitingPaused, TaskType: k.taskType, SchemaName: k.schema, Count: n})
		}
	}
	held, err := s.store.HeldTasks(ctx, s.cfg.Rules.Limits())
	if err != nil {
		return nil, err
	}
	notServed, err := s.store.NotServedHeld(ctx, o, held)
	if err != nil {
		return nil, err
	}
	for _, h := range append(held, notServed...) {
		k := key{h.TaskType, h.SchemaName}
		if sc.has(k.schema) && !paused(k) {
			out = append(out, heldView{Reason: h.Reason, TaskType: k.taskType, SchemaName: k.schema, Count: h.Count})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		if a.TaskType != b.TaskType {
			return a.TaskType < b.TaskType
		}
		return a.SchemaName < b.SchemaName
	})
	return out, nil
}
