package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

// TestBehindPgBouncerSessionMode: a session-mode PgBouncer needs no
// database.session_url, and it refuses startup parameters it does not know
// ("unsupported startup parameter: jit"): wf connects through it without
// the jit=off it asks a server for, and works.
func TestBehindPgBouncerSessionMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	direct := dbtest.NewEmptyDatabase(t)
	bounced := dbtest.PgBouncerMode(t, direct, "session")
	specs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(specs, "record.yaml"), []byte(recordSpec), 0o644))
	c := &cluster{t: t, bin: buildRecorder(t), url: bounced, specs: specs, pool: dbtest.PoolFor(t, direct)}
	out, err := c.command("migrate", "up").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "migrated to version")
	out, err = c.command("enqueue", "--count", "3", "record").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, 3, c.count(`SELECT count(*) FROM tasks.tasks WHERE task_type = 'record'`))
}

// TestBehindPgBouncerSessionModeWithJITInURL: a database URL that sets jit
// itself (?jit=off, or options=-c jit=off) was sent as it is, and the
// session-mode PgBouncer refused it ("unsupported startup parameter"): no
// command could connect. Now the setting is made by SET on each new
// connection instead (store.ConnectWithoutJIT): `wf migrate`, `wf enqueue`
// and two `wf run` processes, one per form of URL, work through the
// bouncer.
func TestBehindPgBouncerSessionModeWithJITInURL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	direct := dbtest.NewEmptyDatabase(t)
	// In session mode each client keeps a server session: room for two
	// instances' pools, leader and presence sessions, and the commands.
	bounced := dbtest.PgBouncerSized(t, direct, "session", 40)
	join := "?"
	if strings.Contains(bounced, "?") {
		join = "&"
	}
	withJIT, withOptions := bounced+join+"jit=off", bounced+join+"options=-c%20jit%3Doff"
	c := newClusterOn(t, direct)
	c.url = withJIT
	via := func(url string) func(*exec.Cmd) *exec.Cmd {
		return func(cmd *exec.Cmd) *exec.Cmd {
			cmd.Env = append(cmd.Env, "WF_DATABASE_URL="+url, "WF_RECORD_DATABASE_URL="+direct)
			return cmd
		}
	}

	out, err := c.command("migrate", "up").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "migrated to version")
	procs := []*exec.Cmd{c.start("a", via(withJIT)), c.start("b", via(withOptions))}
	out, err = via(withOptions)(c.command("enqueue", "--count", "200", "record")).CombinedOutput()
	require.NoError(t, err, string(out))
	c.waitCompleted(200, 3*time.Minute)
	for _, p := range procs {
		stop(t, p)
	}
	require.Equal(t, 200, c.count(`SELECT count(DISTINCT task_id) FROM wf_test.executions`))
}

// TestBehindPgBouncerTransactionMode: two `wf run` processes whose pools go
// through a real PgBouncer in transaction mode (2 server connections shared
// by every client), with database.session_url straight to PostgreSQL,
// migrate an empty database, elect one leader on the direct session and run
// every task exactly once.
func TestBehindPgBouncerTransactionMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	ctx := context.Background()
	direct := dbtest.NewEmptyDatabase(t)
	bounced := dbtest.PgBouncer(t, direct)

	// The bouncer really pools by transaction: pgx's default (a named
	// prepared statement cached per session) breaks when a second client
	// gets the server session the first one prepared on.
	var errs []error
	for range 2 {
		conn, err := pgx.Connect(ctx, bounced)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "SELECT $1::int", 1)
		errs = append(errs, err)
		require.NoError(t, conn.Close(ctx))
	}
	require.NoError(t, errs[0])
	require.ErrorContains(t, errs[1], "already exists")

	c := newClusterOn(t, direct)
	c.url = bounced
	behind := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.Env = append(cmd.Env, "WF_DATABASE_URL="+bounced, "WF_DATABASE_SESSION_URL="+direct, "WF_RECORD_DATABASE_URL="+direct)
		return cmd
	}

	// Migrations take a session lock: through the session URL.
	out, err := behind(c.command("migrate", "up")).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "migrated to version")

	// A URL that sets jit cannot be honoured through this pooler (a SET
	// would hold for one transaction's server session): a clear error.
	jitURL := bounced + "&jit=off"
	if !strings.Contains(bounced, "?") {
		jitURL = bounced + "?jit=off"
	}
	cmd := behind(c.command("enqueue", "record"))
	cmd.Env = append(cmd.Env, "WF_DATABASE_URL="+jitURL)
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "unsupported startup parameter: jit; a transaction-mode pooler takes no session settings: remove jit from the database URL")
	require.Zero(t, c.count(`SELECT count(*) FROM tasks.tasks`))

	procs := []*exec.Cmd{c.start("a", behind), c.start("b", behind)}
	out, err = behind(c.command("enqueue", "--count", "2000", "record")).CombinedOutput()
	require.NoError(t, err, string(out))
	c.waitCompleted(2000, 3*time.Minute)

	// One leader, and its lock is held by a session straight to PostgreSQL
	// (PgBouncer's server sessions carry no wf-leader application name).
	require.Equal(t, 1, c.count(`
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'wf-leader:%'
  AND a.datname = current_database()`))

	for _, p := range procs {
		stop(t, p)
	}
	require.Equal(t, 2000, c.count(`SELECT count(*) FROM wf_test.executions`))
	require.Equal(t, 2000, c.count(`SELECT count(DISTINCT task_id) FROM wf_test.executions`))
	require.Equal(t, 0, c.count(`SELECT count(*) FROM tasks.tasks WHERE attempts <> 1`))
}
