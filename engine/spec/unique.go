package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wfhq/wf/wftype"
)

// Bounds of a task type's unique period: under a second is below the
// precision of task creation times that periods are reckoned in; over 90
// days outlives the retention of finished tasks, whose deletion frees
// their keys.
const (
	minUniquePeriod = time.Second
	maxUniquePeriod = 90 * 24 * time.Hour
)

// Unique is a task type's unique period: its tasks' dedup keys are held for
// Period after a task's creation, also once the task ended in one of
// States. Zero Period: keys are held while the task is live only.
type Unique struct {
	Period time.Duration
	// States are the ended statuses that keep the key until the period is
	// over (COMPLETED when the spec names none).
	States []wftype.TaskStatus
}

// uniqueSpec is the shape of a TaskType's unique (pass 1 checked it).
type uniqueSpec struct {
	Period string   `json:"period"`
	States []string `json:"states"`
}

// Unique is the task type's unique period (zero when it declares none).
func (t *TaskType) Unique() Unique {
	return Unique{Period: t.unique.Period, States: slices.Clone(t.unique.States)}
}

// unique checks and compiles a task type's unique (zero when absent).
func (c *checker) unique(d *document, u *uniqueSpec) Unique {
	if u == nil {
		return Unique{}
	}
	period, ok := c.wholeDuration(d, "/unique/period", u.Period, minUniquePeriod, maxUniquePeriod,
		time.Millisecond, "milliseconds (task creation times are)")
	if !ok {
		return Unique{}
	}
	out := Unique{Period: period, States: []wftype.TaskStatus{wftype.StatusCompleted}}
	if u.States != nil {
		out.States = make([]wftype.TaskStatus, len(u.States))
		for i, st := range u.States {
			out.States[i] = wftype.TaskStatus(st)
		}
	}
	return out
}

// uniqueJSON is the unique period as wf compile --json shows it, nil when
// the task type declares none.
func (t *TaskType) uniqueJSON() *uniqueJSON { return t.unique.toJSON() }

// toJSON is u as wf compile --json shows it, nil when u is zero.
func (u Unique) toJSON() *uniqueJSON {
	if u.Period == 0 {
		return nil
	}
	states := make([]string, len(u.States))
	for i, st := range u.States {
		states[i] = string(st)
	}
	return &uniqueJSON{Period: FormatDuration(u.Period), States: states}
}

// UniqueText describes a task type's unique period in a line of text:
// "none", or the period and the ended statuses that keep the key.
func UniqueText(u Unique) string {
	if u.Period == 0 {
		return "none (a key is held while its task is PENDING or ACTIVE)"
	}
	states := make([]string, len(u.States))
	for i, st := range u.States {
		states[i] = string(st)
	}
	kept := "no ended status"
	if len(states) > 0 {
		kept = strings.Join(states, ", ")
	}
	return fmt.Sprintf("%s from a task's creation, while it is live or ended %s", FormatDuration(u.Period), kept)
}

// Unique is the subscription's own unique period for the keys of the
// tasks it creates, zero when it declares none (the task type's applies).
func (s *Subscription) Unique() Unique {
	if s.unique == nil {
		return Unique{}
	}
	return Unique{Period: s.unique.Period, States: slices.Clone(s.unique.States)}
}

// OnDuplicate is what an enqueue does when a live task holds its dedup key
// (a task type's on_duplicate).
type OnDuplicate string

// The values of on_duplicate.
const (
	// DuplicateKeep creates nothing and answers with the holder (the
	// default).
	DuplicateKeep OnDuplicate = "keep"
	// DuplicateReplaceQueued cancels a PENDING holder and creates the new
	// task; a running holder is kept.
	DuplicateReplaceQueued OnDuplicate = "replace_queued"
	// DuplicateCancelRunning cancels the holder, PENDING or running, and
	// creates the new task.
	DuplicateCancelRunning OnDuplicate = "cancel_running"
)

// OnDuplicate is the task type's on_duplicate (DuplicateKeep by default).
func (t *TaskType) OnDuplicate() OnDuplicate { return cmp.Or(t.onDuplicate, DuplicateKeep) }

// onDuplicate checks a task type's on_duplicate: a value other than keep
// needs the type's dedup_key.
func (c *checker) onDuplicate(d *document, value, dedupKey string) OnDuplicate {
	o := OnDuplicate(value)
	if o != "" && o != DuplicateKeep && dedupKey == "" {
		c.fail(d, "/on_duplicate", "%s replaces the task holding the dedup key, so the task type needs a dedup_key", o)
	}
	return o
}
