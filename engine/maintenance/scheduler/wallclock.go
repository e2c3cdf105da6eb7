package scheduler

import (
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/wfhq/wf/engine/spec"
)

// wallClock reads a schedule's ticks as a system cron (Vixie cron, cronie)
// fires them across daylight-saving changes. robfig/cron alone matches wall
// times only: a job at a fixed time inside the hour the clocks skip (02:30
// in Europe/Paris on the last Sunday of March) never fires that day, and one
// inside the hour they repeat (last Sunday of October) fires twice. For a
// fixed-time schedule (neither its minute nor its hour field is a wildcard,
// or a descriptor such as @daily) wallClock fires a skipped tick once, at
// the instant the clocks jump, and a repeated one once, at its first
// occurrence. Wildcard schedules (every hour, every 15 minutes) follow
// real time: every hour that exists fires, the repeated one twice.
type wallClock struct {
	// fixed: the schedule runs at fixed wall times (see above).
	fixed bool
	// spec is the cron line read in the zone of the time it is given, to
	// look for ticks in a skipped hour (nil: not looked for).
	spec cron.Schedule
}

// newWallClock reads sch's cron line once more (the spec set keeps only the
// schedule in its own zone).
func newWallClock(sch *spec.Schedule) *wallClock {
	line := strings.TrimSpace(sch.Cron())
	w := &wallClock{}
	if strings.HasPrefix(line, "@") {
		switch line {
		case "@hourly":
		default:
			w.fixed = !strings.HasPrefix(line, "@every")
		}
	} else if f := strings.Fields(line); len(f) == 5 {
		star := func(s string) bool { return strings.HasPrefix(s, "*") || strings.HasPrefix(s, "?") }
		w.fixed = !star(f[0]) && !star(f[1])
	}
	if w.fixed {
		parsed, err := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor).Parse(line)
		if err == nil {
			w.spec = parsed
		}
	}
	return w
}

// next returns the first tick of sch strictly after t (the zero time when
// there is none within robfig/cron's five years).
func (w *wallClock) next(sch *spec.Schedule, t time.Time) time.Time {
	for {
		n := sch.Next(t)
		if !w.fixed || n.IsZero() {
			return n
		}
		if g := w.skippedTick(sch.Location(), t, n); !g.IsZero() {
			return g
		}
		if !repeatedWallTime(n.In(sch.Location())) {
			return n
		}
		t = n // the second occurrence of a wall time that already fired
	}
}

// skippedTick returns, when the clocks of loc jump forward in (t, n] over a
// wall time the schedule names, the instant of that jump (the first one), and
// the zero time otherwise.
func (w *wallClock) skippedTick(loc *time.Location, t, n time.Time) time.Time {
	if w.spec == nil {
		return time.Time{}
	}
	for at := t; ; {
		_, end := at.In(loc).ZoneBounds()
		if end.IsZero() || end.After(n) {
			return time.Time{}
		}
		_, before := at.In(loc).Zone()
		_, after := end.In(loc).Zone()
		if after > before {
			// The wall times [end, end+shift) read at the old offset do not
			// exist: in a zone fixed at that offset they are the instants
			// [end, end+shift).
			shift := time.Duration(after-before) * time.Second
			old := time.FixedZone("", before)
			if m := w.spec.Next(end.Add(-time.Second).In(old)); !m.IsZero() && m.Before(end.Add(shift)) {
				return end
			}
		}
		at = end
	}
}

// repeatedWallTime reports whether local is the second occurrence of its
// wall time: the clocks went back less than the shift before it.
func repeatedWallTime(local time.Time) bool {
	start, _ := local.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, after := local.Zone()
	_, before := start.Add(-time.Second).In(local.Location()).Zone()
	return before > after && local.Sub(start) < time.Duration(before-after)*time.Second
}
