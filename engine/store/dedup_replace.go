package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/wfhq/wf/wftype"
)

// OnDuplicate is what an enqueue does when a live task holds its dedup key
// (a task type's on_duplicate; docs/flow-control.md).
type OnDuplicate string

// The answers to a live holder of the key.
const (
	// KeepExisting (the default, "") creates nothing and answers with the
	// holder.
	KeepExisting OnDuplicate = ""
	// ReplaceQueued cancels a PENDING holder and creates the new task in
	// its place; an ACTIVE holder is kept (the new task is its duplicate).
	ReplaceQueued OnDuplicate = "replace_queued"
	// CancelRunning cancels the holder, PENDING or ACTIVE (its run is told
	// to stop, and ends CANCELLED), and creates the new task: newest wins.
	CancelRunning OnDuplicate = "cancel_running"
)

// replaces reports whether a holder in status st gives way to a new task.
func (o OnDuplicate) replaces(st wftype.TaskStatus) bool {
	switch o {
	case ReplaceQueued:
		return st == wftype.StatusPending
	case CancelRunning:
		return st == wftype.StatusPending || st == wftype.StatusActive
	}
	return false
}

// replaceAttempts bounds the rounds of an insert that replaces holders:
// each round cancels the holders that the last one found (another
// enqueue's task that took the key meanwhile, itself replaceable) and
// inserts again.
const replaceAttempts = 10

// insertReplacing is InsertTasks for a batch in which some tasks replace
// the live holders of their keys, in one transaction (the caller's, when
// the store runs in one): insert; cancel the holders of the keys of the
// tasks left out whose OnDuplicate gives way to them (ReplaceQueued:
// PENDING ones only; the cancel's statement re-checks the status under the
// row's lock, so a holder claimed meanwhile keeps running); insert those
// tasks again, now that the cancels freed their keys. Two enqueues racing
// to replace one holder take turns on its row: the second finds it
// cancelled and the first's task holding the key, and replaces that in
// turn, so the newest to commit wins and one task of the key stays live. A
// task still left out after replaceAttempts rounds is answered as a
// duplicate of the key's last holder.
func (s *Store) insertReplacing(ctx context.Context, tasks []NewTask) ([]InsertResult, error) {
	if !s.inTx {
		return inTxValue(ctx, s, func(tx *Store) ([]InsertResult, error) { return tx.insertReplacing(ctx, tasks) })
	}
	out := make([]InsertResult, len(tasks))
	todo := make([]int, len(tasks)) // indexes into tasks still to insert
	for i := range todo {
		todo[i] = i
	}
	replaced := map[int]uuid.UUID{}
	for attempt := 0; len(todo) > 0; attempt++ {
		batch := make([]NewTask, len(todo))
		for j, i := range todo {
			batch[j] = tasks[i]
		}
		res, err := s.insertTasks(ctx, batch, len(batch) >= copyMinTasks)
		if err != nil {
			return nil, err
		}
		var again []int
		var running, queued []uuid.UUID
		for j, i := range todo {
			r := res[j]
			out[i] = r
			if h, ok := replaced[i]; ok && !r.Duplicate && !r.Released {
				out[i].Replaced = &h
			}
			if !r.Duplicate || attempt+1 >= replaceAttempts || !tasks[i].OnDuplicate.replaces(r.Task.Status) {
				continue
			}
			again = append(again, i)
			replaced[i] = r.Task.ID
			if tasks[i].OnDuplicate == CancelRunning {
				running = append(running, r.Task.ID)
			} else {
				queued = append(queued, r.Task.ID)
			}
		}
		if len(again) == 0 {
			break
		}
		if _, err := s.cancelTasksIn(ctx, running, false); err != nil {
			return nil, err
		}
		if _, err := s.cancelTasksIn(ctx, queued, true); err != nil {
			return nil, err
		}
		todo = again
	}
	return out, nil
}

// replacing reports whether a task of tasks replaces the live holder of
// its key.
func replacing(tasks []NewTask) bool {
	for i := range tasks {
		if tasks[i].OnDuplicate != KeepExisting && tasks[i].DedupKey != "" {
			return true
		}
	}
	return false
}
