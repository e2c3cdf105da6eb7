package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/internal/dbtest"
)

// envRole makes the test binary act as withdb ("withdb") or as the command
// withdb runs ("report"), so the test runs the real program in real
// processes without building it.
const envRole = "WF_WITHDB_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "withdb":
		os.Exit(run())
	case "report":
		os.Exit(report())
	}
	os.Exit(m.Run())
}

// reported is what the "report" role prints: the Go clock and the test
// server's clock as they read them, and how the server's statement timeout
// behaved.
type reported struct {
	Go, DB        time.Time
	TimeoutState  string        // SQLSTATE of the statement past its statement_timeout
	TimeoutTook   time.Duration // real time until it was cancelled
	TimeoutErrMsg string
}

// report connects to the server withdb started and prints a reported.
func report() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, os.Getenv(dbtest.EnvURL))
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		return 1
	}
	defer conn.Close(ctx)
	var r reported
	r.Go = clock.Now()
	if err := conn.QueryRow(ctx, `SELECT now()`).Scan(&r.DB); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		return 1
	}
	// The server's timers must fire on time in the moved clock too: a
	// statement past its timeout is cancelled, not left to run out.
	if _, err := conn.Exec(ctx, `SET statement_timeout = '300ms'`); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		return 1
	}
	start := time.Now()
	_, err = conn.Exec(ctx, `SELECT pg_sleep(20)`)
	r.TimeoutTook = time.Since(start)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		r.TimeoutState, r.TimeoutErrMsg = pgErr.Code, pgErr.Message
	} else if err != nil {
		r.TimeoutErrMsg = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		return 1
	}
	return 0
}

// runWithdb runs the test binary as withdb with the given WF_TEST_NOW and
// its own throwaway server (not the one of the run this test is part of,
// nor its offset), the report role as its command; extra is more
// environment.
func runWithdb(t *testing.T, testNow string, extra ...string) (stdout, stderr string, err error) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "--", "env", envRole+"=report", self)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case dbtest.EnvURL, clock.EnvTestNow, clock.EnvTestOffset, envRole:
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, envRole+"=withdb", clock.EnvTestNow+"="+testNow)
	cmd.Env = append(cmd.Env, extra...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestRunsAsIfItWereAnotherDate: with WF_TEST_NOW, the Go clock of the
// command withdb runs and now() on the server it starts are both at that
// date (time running on from there), and the server's timeouts still fire
// on time.
func TestRunsAsIfItWereAnotherDate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	const testNow = "2028-02-29T23:59:50+01:00" // a leap day, in a zone other than UTC
	want, err := time.Parse(time.RFC3339, testNow)
	require.NoError(t, err)
	stdout, stderr, err := runWithdb(t, testNow)
	require.NoError(t, err, "withdb failed: %s", stderr)
	require.Contains(t, stderr, "withdb: running as if it were ")

	var r reported
	require.NoError(t, json.Unmarshal([]byte(stdout), &r), "report printed %q", stdout)
	// Starting a cluster on a loaded machine takes a while: the clocks are
	// at the date or somewhat after it, never before.
	const slack = 5 * time.Minute
	for name, got := range map[string]time.Time{"the Go clock": r.Go, "the server's now()": r.DB} {
		require.False(t, got.Before(want.Add(-2*time.Second)), "%s is %s, before %s", name, got, want)
		require.True(t, got.Before(want.Add(slack)), "%s is %s, far after %s", name, got, want)
	}
	require.WithinDuration(t, r.Go, r.DB, time.Minute, "Go and the server disagree on the time")
	require.Equal(t, "57014", r.TimeoutState, "statement_timeout did not cancel pg_sleep (%s) after %v", r.TimeoutErrMsg, r.TimeoutTook)
	require.Less(t, r.TimeoutTook, 15*time.Second, "the statement timeout fired late")
}

// TestRefusesMalformedTestNow: a malformed WF_TEST_NOW stops withdb before
// it starts anything, with an error naming the variable and the form wanted.
func TestRefusesMalformedTestNow(t *testing.T) {
	t.Parallel()
	stdout, stderr, err := runWithdb(t, "2027-02-29T00:00:00")
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, 1, exitErr.ExitCode())
	require.Contains(t, stderr, `error reading WF_TEST_NOW="2027-02-29T00:00:00": want an RFC 3339 time`)
	require.Empty(t, stdout, "the command ran though the date was malformed")
}

// TestRefusesTestNowOnAServerOfYourOwn: a server named by
// WF_TEST_DATABASE_URL keeps today's clock, so WF_TEST_NOW with it would run
// Go at one date and SQL at another: refused.
func TestRefusesTestNowOnAServerOfYourOwn(t *testing.T) {
	t.Parallel()
	stdout, stderr, err := runWithdb(t, "2027-03-01T00:00:00Z", dbtest.EnvURL+"=postgres://nobody@127.0.0.1:1/postgres")
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Contains(t, stderr, "WF_TEST_DATABASE_URL points at a server whose clock is not moved")
	require.Empty(t, stdout, "the command ran though its server was not moved")
}
