package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
)

// env returns a getenv over vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestOffsetFromEnv: WF_TEST_NOW names the instant the run starts at (any
// zone), the offset is whole seconds, WF_TEST_NOW_OFFSET wins over it, and
// nothing set means no offset.
func TestOffsetFromEnv(t *testing.T) {
	now := time.Date(2031, 7, 9, 10, 11, 12, 400_000_000, time.UTC) // any instant: only the distance counts
	for _, tt := range []struct {
		name string
		vars map[string]string
		want time.Duration
	}{
		{"unset", nil, 0},
		{"ahead", map[string]string{clock.EnvTestNow: "2031-07-10T10:11:12Z"}, 24 * time.Hour},
		{"behind in another zone", map[string]string{clock.EnvTestNow: "2031-07-09T11:11:12+02:00"}, -time.Hour},
		{"rounded to seconds", map[string]string{clock.EnvTestNow: "2031-07-09T10:11:22Z"}, 10 * time.Second},
		{"offset wins", map[string]string{clock.EnvTestNow: "2040-01-01T00:00:00Z", clock.EnvTestOffset: "-90"}, -90 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clock.OffsetFromEnv(env(tt.vars), now)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			if tt.vars[clock.EnvTestNow] != "" && tt.vars[clock.EnvTestOffset] == "" {
				at, err := time.Parse(time.RFC3339, tt.vars[clock.EnvTestNow])
				require.NoError(t, err)
				require.WithinDuration(t, at, now.Add(got), time.Second)
			}
		})
	}
}

// TestOffsetFromEnvRejectsMalformed: a run meant for another date never
// falls back to today's: a malformed value is an error naming the variable,
// the value and the form wanted.
func TestOffsetFromEnvRejectsMalformed(t *testing.T) {
	now := time.Date(2031, 7, 9, 10, 11, 12, 0, time.UTC)
	for _, tt := range []struct {
		name, key, value, want string
	}{
		{"not a date", clock.EnvTestNow, "tomorrow", `WF_TEST_NOW="tomorrow": want an RFC 3339 time`},
		{"no zone", clock.EnvTestNow, "2028-02-29T23:59:50", `WF_TEST_NOW="2028-02-29T23:59:50": want an RFC 3339 time`},
		{"no such day", clock.EnvTestNow, "2027-02-29T00:00:00Z", `WF_TEST_NOW="2027-02-29T00:00:00Z"`},
		{"offset not seconds", clock.EnvTestOffset, "3h", `WF_TEST_NOW_OFFSET="3h": want whole seconds`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clock.OffsetFromEnv(env(map[string]string{tt.key: tt.value}), now)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestFake: a Fake moves only when told, and hands statements its time.
func TestFake(t *testing.T) {
	start := time.Date(2031, 7, 9, 10, 11, 12, 0, time.UTC)
	f := clock.NewFake(start)
	require.Equal(t, start, f.Now())
	f.Advance(time.Minute)
	require.Equal(t, start.Add(time.Minute), f.Now())
	require.Equal(t, start.Add(time.Minute), *f.DBNow())
	f.Set(start)
	require.Equal(t, start, f.Now())
	require.Nil(t, clock.Real{}.DBNow())
}
