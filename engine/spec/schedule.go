package spec

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/robfig/cron/v3"
)

// MissedPolicy says what the leader does about ticks that passed while no
// leader ran.
type MissedPolicy string

// Missed-tick policies.
const (
	// MissedSkip forgets missed ticks; the next tick fires as usual.
	MissedSkip MissedPolicy = "skip"
	// MissedLatest fires once for the latest missed tick.
	MissedLatest MissedPolicy = "latest"
)

// Schedule is a compiled Schedule spec. It is immutable.
type Schedule struct {
	named
	cronLine   string
	cron       cron.Schedule
	location   *time.Location
	taskType   *TaskType // for a workflow schedule, the workflow's inputs (Workflow.inputsTarget)
	workflow   *Workflow // the workflow it starts runs of, nil when it creates tasks
	schemaName string
	inputs     json.RawMessage
	missed     MissedPolicy
}

// Cron is the cron line as written.
func (s *Schedule) Cron() string { return s.cronLine }

// Location is the time zone the cron line is read in.
func (s *Schedule) Location() *time.Location { return s.location }

// TaskType is the name of the task type the schedule creates;
// "workflow:NAME" for one that starts runs of workflow NAME (Workflow).
func (s *Schedule) TaskType() string { return s.taskType.name }

// SchemaName is the schema_name of the tasks the schedule creates.
func (s *Schedule) SchemaName() string { return s.schemaName }

// Inputs are the inputs of the tasks the schedule creates, as JSON. They
// were checked against the task type's schema when the set was compiled.
func (s *Schedule) Inputs() json.RawMessage { return bytes.Clone(s.inputs) }

// Missed is the schedule's policy for ticks missed while no leader ran.
func (s *Schedule) Missed() MissedPolicy { return s.missed }

// Next returns the first tick strictly after t.
func (s *Schedule) Next(t time.Time) time.Time { return s.cron.Next(t.In(s.location)) }

// Every returns the interval of an @every schedule (whole seconds, as
// robfig/cron counts them) and false for a cron line. An @every schedule has
// no fixed ticks: the scheduler counts them from the schedule's latest tick,
// or from its first sighting.
func (s *Schedule) Every() (time.Duration, bool) {
	every, ok := s.cron.(cron.ConstantDelaySchedule)
	return every.Delay, ok
}

// LatestBetween returns the last tick in (after, until], if there is one.
// The scheduler uses it to apply MissedLatest.
//
// An @every schedule has no fixed ticks: they count from after.
func (s *Schedule) LatestBetween(after, until time.Time) (time.Time, bool) {
	if every, ok := s.cron.(cron.ConstantDelaySchedule); ok {
		// Ticks fall on whole seconds (robfig/cron rounds them so), and
		// counting in seconds cannot overflow as durations would.
		step := int64(max(every.Delay/time.Second, 1))
		n := (until.Unix() - after.Unix()) / step
		if n < 1 {
			return time.Time{}, false
		}
		return time.Unix(after.Unix()+n*step, 0).In(s.location), true
	}
	// Scan windows ending at until, doubling them, so that a frequent
	// schedule after a long outage costs a few ticks, not all of them.
	const maxWindow = 100 * 366 * 24 * time.Hour
	for window := time.Hour; ; window *= 2 {
		from := after
		if window < until.Sub(after) && window < maxWindow {
			from = until.Add(-window)
		}
		var latest time.Time
		found := false
		for t := s.Next(from); !t.IsZero() && !t.After(until); t = s.Next(t) {
			latest, found = t, true
		}
		if found || from.Equal(after) {
			return latest, found
		}
	}
}

// DedupKey is the dedup key of the task fired for tick: the same tick never
// creates two tasks, even across a change of leader.
func (s *Schedule) DedupKey(tick time.Time) string {
	return "sched:" + s.name + ":" + tick.UTC().Format(time.RFC3339)
}
