package scheduler_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/maintenance/scheduler"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/internal/dbtest"
)

const parisSpecs = `kind: TaskType
name: tick
handler: {builtin: noop}
---
kind: Schedule
name: nightly
cron: "30 2 * * *"
timezone: Europe/Paris
task_type: tick
---
kind: Schedule
name: hourly
cron: "0 * * * *"
timezone: Europe/Paris
task_type: tick
---
kind: Schedule
name: midnight
cron: "@daily"
timezone: Europe/Paris
task_type: tick
`

// TestDaylightSavingTime runs Europe/Paris schedules through both nights the
// clocks change in 2024, one pass every 15 minutes. A daily 02:30 job fires
// once each night, as a system cron runs it: on 31 March, when 02:00 jumps
// to 03:00, at 03:00 CEST (not never); on 27 October, when 03:00 falls back
// to 02:00, at the first 02:30 only (not twice). An hourly job fires every
// real hour: 23 ticks on the short day, 25 on the long one.
func TestDaylightSavingTime(t *testing.T) {
	t.Parallel()
	set, err := spec.Compile([]spec.Source{{Name: "s.yaml", Data: []byte(parisSpecs)}}, spec.Options{Builtins: []string{"noop"}})
	require.NoError(t, err)
	st := dbtest.NewStore(t)
	ctx := t.Context()
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)

	for _, night := range []struct {
		day             time.Time
		nightly, hourly []string // expected ticks, UTC
	}{
		{
			day:     time.Date(2024, 3, 31, 0, 0, 0, 0, paris),
			nightly: []string{"2024-03-31T01:00:00Z"}, // 03:00 CEST
		},
		{
			day:     time.Date(2024, 10, 27, 0, 0, 0, 0, paris),
			nightly: []string{"2024-10-27T00:30:00Z"}, // 02:30 CEST, not 02:30 CET again
		},
	} {
		s, err := scheduler.New(scheduler.Config{Store: st, Client: client.New(st, set), Schedules: set.Schedules(),
			CatchUp: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		from := night.day.Add(-time.Minute)
		_, err = s.Resume(ctx, from)
		require.NoError(t, err)
		until := night.day.AddDate(0, 0, 1).Add(-time.Minute)
		for now := from; !now.After(until); now = now.Add(15 * time.Minute) {
			_, err := s.RunAt(ctx, now)
			require.NoError(t, err)
		}
		ticks := func(name string) []string {
			rows, err := st.DB().Query(ctx, `SELECT tick FROM tasks.schedule_ticks WHERE schedule_name = $1 AND tick >= $2 AND tick < $3 ORDER BY tick`,
				name, night.day, until)
			require.NoError(t, err)
			defer rows.Close()
			var out []string
			for rows.Next() {
				var at time.Time
				require.NoError(t, rows.Scan(&at))
				out = append(out, at.UTC().Format(time.RFC3339))
			}
			require.NoError(t, rows.Err())
			return out
		}
		require.Equal(t, night.nightly, ticks("nightly"), night.day)
		require.Equal(t, []string{night.day.UTC().Format(time.RFC3339)}, ticks("midnight"), night.day)
		hours := int(night.day.AddDate(0, 0, 1).Sub(night.day) / time.Hour)
		hourly := ticks("hourly")
		require.Len(t, hourly, hours, "%s: %v", night.day, hourly)
		for i := 1; i < len(hourly); i++ {
			a, _ := time.Parse(time.RFC3339, hourly[i-1])
			b, _ := time.Parse(time.RFC3339, hourly[i])
			require.Equal(t, time.Hour, b.Sub(a), "hourly ticks %v", hourly)
		}
	}
}

// TestFirstTickSurvivesHandover: a schedule that never fired yet loses no
// tick when its leader changes around its first tick. A resumes it at
// t0+10s and dies at t0+50s; B leads from t0+1m20s: the t0+1m tick fires.
func TestFirstTickSurvivesHandover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, c := b.scheduler(t, "every-minute"), b.scheduler(t, "every-minute")
	_, err := a.Resume(b.ctx, b.t0.Add(10*time.Second))
	require.NoError(t, err)
	before := b.count(t, `SELECT count(*) FROM tasks.schedule_ticks`)
	r, err := a.RunAt(b.ctx, b.t0.Add(50*time.Second))
	require.NoError(t, err)
	require.Zero(t, r.Fired)

	r, err = c.Resume(b.ctx, b.t0.Add(80*time.Second))
	require.NoError(t, err)
	require.Equal(t, 1, r.Fired, "the first tick after the handover fires")
	require.Equal(t, before+1, b.count(t, `SELECT count(*) FROM tasks.schedule_ticks`))
	var last time.Time
	require.NoError(t, b.store.DB().QueryRow(b.ctx, `SELECT max(tick) FROM tasks.schedule_ticks`).Scan(&last))
	require.True(t, b.t0.Add(time.Minute).Equal(last), "last tick %s", last)
}
