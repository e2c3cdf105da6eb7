package spec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const scheduleSpecs = `
kind: TaskType
name: report
handler: {builtin: noop}
inputs:
  type: object
  properties: {days: {type: integer}}
---
kind: Schedule
name: nightly
cron: "0 2 * * *"
timezone: Europe/Rome
task_type: report
schema_name: s_abc
inputs: {days: 7}
missed: latest
---
kind: Schedule
name: every-ten
cron: "@every 10m"
task_type: report
`

func TestSchedule(t *testing.T) {
	t.Parallel()
	set := compileYAML(t, scheduleSpecs)
	scheds := set.Schedules()
	require.Len(t, scheds, 2)
	every, nightly := scheds[0], scheds[1]
	rome, err := time.LoadLocation("Europe/Rome")
	require.NoError(t, err)

	t.Run("Fields", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "nightly", nightly.Name())
		require.Equal(t, "0 2 * * *", nightly.Cron())
		require.Equal(t, "Europe/Rome", nightly.Location().String())
		require.Equal(t, "report", nightly.TaskType())
		require.Equal(t, "s_abc", nightly.SchemaName())
		require.Equal(t, MissedLatest, nightly.Missed())
		require.JSONEq(t, `{"days":7}`, string(nightly.Inputs()))
		in := nightly.Inputs()
		in[0] = 'X'
		require.JSONEq(t, `{"days":7}`, string(nightly.Inputs()), "Inputs returns a copy")

		require.Equal(t, "system", every.SchemaName())
		require.Equal(t, MissedSkip, every.Missed())
		require.Equal(t, time.UTC, every.Location())
		require.JSONEq(t, `{}`, string(every.Inputs()))
	})

	t.Run("NextInTheTimeZone", func(t *testing.T) {
		t.Parallel()
		// 00:30 UTC on 1 July is 02:30 in Rome (CEST): the next 02:00 Rome is the day after.
		next := nightly.Next(time.Date(2026, 7, 1, 0, 30, 0, 0, time.UTC))
		require.True(t, next.Equal(time.Date(2026, 7, 2, 2, 0, 0, 0, rome)), next.String())
		require.True(t, next.Equal(time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)))
		// In winter (CET) 02:00 Rome is 01:00 UTC.
		next = nightly.Next(time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC))
		require.True(t, next.Equal(time.Date(2026, 1, 10, 1, 0, 0, 0, time.UTC)), next.String())

		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		require.Equal(t, start.Add(10*time.Minute), every.Next(start).UTC())
	})

	t.Run("LatestBetween", func(t *testing.T) {
		t.Parallel()
		after := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		latest, ok := nightly.LatestBetween(after, after.Add(30*24*time.Hour))
		require.True(t, ok)
		require.True(t, latest.Equal(time.Date(2026, 1, 30, 1, 0, 0, 0, time.UTC)), latest.String())

		_, ok = nightly.LatestBetween(after, after.Add(time.Hour/2))
		require.False(t, ok)

		// Years of ten-minute ticks cost a few windows, not every tick.
		latest, ok = every.LatestBetween(after, after.Add(3*365*24*time.Hour+5*time.Minute))
		require.True(t, ok)
		require.Equal(t, after.Add(3*365*24*time.Hour), latest.UTC())

		_, ok = every.LatestBetween(after, after.Add(-time.Hour))
		require.False(t, ok)
		latest, ok = every.LatestBetween(time.Time{}, after)
		require.True(t, ok)
		require.False(t, latest.After(after))
		require.Less(t, after.Sub(latest), 10*time.Minute)
	})

	t.Run("DedupKeyPerTick", func(t *testing.T) {
		t.Parallel()
		tick := time.Date(2026, 7, 2, 2, 0, 0, 0, rome)
		require.Equal(t, "sched:nightly:2026-07-02T00:00:00Z", nightly.DedupKey(tick))
		require.Equal(t, nightly.DedupKey(tick), nightly.DedupKey(tick.UTC()))
	})
}
