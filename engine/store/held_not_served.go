package store

import (
	"context"
	"slices"
)

// NotServedHeld counts, per type and tenant, the due PENDING tasks of o
// (its snapshot's due counts) whose type no live instance serves
// (UnservedTaskTypes), less those paused (o.Paused) and those a limit holds
// (held, as HeldTasks counts them): reason WaitingNotServed, for
// wf_tasks_held beside HeldTasks' reasons.
func (s *Store) NotServedHeld(ctx context.Context, o Overview, held []Held) ([]Held, error) {
	var types []string
	for _, a := range o.OldestPending {
		if a.Due > 0 && !slices.Contains(types, a.TaskType) {
			types = append(types, a.TaskType)
		}
	}
	unserved, err := s.UnservedTaskTypes(ctx, types)
	if err != nil || len(unserved) == 0 {
		return nil, err
	}
	paused := map[PauseKind]map[string]bool{PauseTaskType: {}, PauseTenant: {}}
	for _, p := range o.Paused {
		if paused[p.Kind] != nil {
			paused[p.Kind][p.Name] = true
		}
	}
	var out []Held
	for _, a := range o.OldestPending {
		if !slices.Contains(unserved, a.TaskType) || paused[PauseTaskType][a.TaskType] || paused[PauseTenant][a.SchemaName] {
			continue
		}
		n := a.Due
		for _, h := range held {
			if h.TaskType == a.TaskType && h.SchemaName == a.SchemaName {
				n -= h.Count
			}
		}
		if n > 0 {
			out = append(out, Held{TaskType: a.TaskType, SchemaName: a.SchemaName, Reason: WaitingNotServed, Count: n})
		}
	}
	return out, nil
}
