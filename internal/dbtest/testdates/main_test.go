package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestRestartAtPutsTheServerAtTheDate: after restartAt, the server's now()
// and the real clock moved by the returned offset are both at the date
// (within the tolerance), however far the date is; a restart that cannot
// make the date within the tolerance is an error naming how late it was.
func TestRestartAtPutsTheServerAtTheDate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, err := parseDates([]string{"2027-04-30T23:59:59+01:00@Europe/Rome"})
	require.NoError(t, err)
	srv, err := startServer(ctx, d[0])
	require.NoError(t, err)
	t.Cleanup(srv.remove)

	// A loaded machine may take a while to answer the first query, so the
	// check is generous; the tolerance is what restartAt guarantees.
	const tolerance = 5 * time.Second
	for _, at := range []time.Time{d[0].at, d[0].at.AddDate(1, 2, 3)} {
		offset, late, err := srv.restartAt(ctx, at, tolerance)
		require.NoError(t, err)
		goNow := time.Now().Add(offset)
		conn, err := pgx.Connect(ctx, srv.cluster.URL("postgres"))
		require.NoError(t, err)
		var dbNow time.Time
		require.NoError(t, conn.QueryRow(ctx, "SELECT now()").Scan(&dbNow))
		var zone string
		require.NoError(t, conn.QueryRow(ctx, "SHOW timezone").Scan(&zone))
		conn.Close(ctx)
		require.LessOrEqual(t, late, tolerance)
		require.False(t, goNow.Before(at), "the Go clock is %s, before %s", goNow, at)
		require.WithinDuration(t, at, goNow, tolerance+30*time.Second)
		require.WithinDuration(t, goNow, dbNow, 5*time.Second, "the server and Go disagree")
		require.Equal(t, "Europe/Rome", zone)
	}

	// No restart is fast enough for a negative tolerance: refused, not run late.
	_, _, err = srv.restartAt(ctx, d[0].at, -time.Hour)
	require.ErrorContains(t, err, "past 2027-04-30T23:59:59+01:00 (more than -1h0m0s): restarting the server took")
}

// TestRefusesBadArguments: a malformed date or zone, or no packages, is a
// usage error (exit 2) before anything is compiled or started.
func TestRefusesBadArguments(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no zone in the date": {[]string{"2027-03-01T00:00:00", "--", "./x"}, `error reading the date "2027-03-01T00:00:00": want an RFC 3339 time`},
		"no such day":         {[]string{"2027-02-29T00:00:00Z", "--", "./x"}, `error reading the date "2027-02-29T00:00:00Z"`},
		"unknown zone":        {[]string{"2027-03-01T00:00:00Z@Mars/Olympus", "--", "./x"}, `unknown time zone "Mars/Olympus"`},
		"no packages":         {[]string{"2027-03-01T00:00:00Z", "--"}, "usage: testdates"},
		"no dates":            {[]string{"--", "./x"}, "usage: testdates"},
		"dated with -run":     {[]string{"-dated", "-run", "TestX", "2027-03-01T00:00:00Z", "--", "./x"}, "-run and -dated exclude each other"},
		"no jobs":             {[]string{"-jobs", "0", "2027-03-01T00:00:00Z", "--", "./x"}, "usage: testdates"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, 2, run(tc.args, &stdout, &stderr))
			require.Contains(t, stderr.String(), tc.want)
			require.Empty(t, stdout.String())
		})
	}
}

// TestWholeSecondsRoundsDown: the offset is never later than asked.
func TestWholeSecondsRoundsDown(t *testing.T) {
	t.Parallel()
	require.Equal(t, 2*time.Second, wholeSeconds(2900*time.Millisecond))
	require.Equal(t, -3*time.Second, wholeSeconds(-2100*time.Millisecond))
	require.Equal(t, -2*time.Second, wholeSeconds(-2*time.Second))
}
