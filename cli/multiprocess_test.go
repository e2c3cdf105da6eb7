package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

const recordSpec = `kind: TaskType
name: record
description: Records each execution in wf_test.executions.
handler: {builtin: record}
max_retries: 5
visibility_timeout: 5s
backoff: {base: 100ms, factor: 1, max: 1s}
`

// buildRecorder builds wfrecord (wf plus a recording handler) once per test.
func buildRecorder(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wfrecord")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/wfrecord").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

type cluster struct {
	t     *testing.T
	bin   string
	url   string
	specs string
	pool  *pgxpool.Pool
}

// newCluster is a database with the recorder's table and task type, and
// the recorder built; with -short the test is skipped (it starts processes).
func newCluster(t *testing.T) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	return newClusterOn(t, dbtest.NewDatabase(t))
}

// newClusterOn is newCluster on the database at url (migrated or not).
func newClusterOn(t *testing.T, url string) *cluster {
	t.Helper()
	pool := dbtest.PoolFor(t, url)
	_, err := pool.Exec(context.Background(), `
CREATE SCHEMA wf_test;
CREATE TABLE wf_test.executions (task_id uuid NOT NULL, pid int NOT NULL, attempt int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`)
	require.NoError(t, err)
	specs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(specs, "record.yaml"), []byte(recordSpec), 0o644))
	return &cluster{t: t, bin: buildRecorder(t), url: url, specs: specs, pool: pool}
}

func (c *cluster) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), "WF_DATABASE_URL="+c.url, "WF_SPECS="+c.specs, "WF_LOG_FORMAT=json", "WF_LOG_LEVEL=warn",
		// Each instance serves the HTTP API on a port of its own.
		"WF_LISTEN=127.0.0.1:0")
	return cmd
}

func (c *cluster) enqueue(n int) {
	out, err := c.command("enqueue", "--count", fmt.Sprint(n), "record").CombinedOutput()
	require.NoError(c.t, err, string(out))
}

// start starts `wf run` as name; each of adjust may change the command first.
func (c *cluster) start(name string, adjust ...func(*exec.Cmd) *exec.Cmd) *exec.Cmd {
	cmd := c.command("run", "--slots", "40", "--poll-interval", "200ms", "--heartbeat-interval", "1s", "--janitor-interval", "1s", "--grace", "5s")
	for _, a := range adjust {
		cmd = a(cmd)
	}
	// Sessions carry the process's name, so a test can wait for them to end.
	cmd.Env = append(cmd.Env, "PGAPPNAME=wfrecord-"+name)
	logFile, err := os.Create(filepath.Join(c.t.TempDir(), name+".log"))
	require.NoError(c.t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(c.t, cmd.Start())
	c.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if c.t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			c.t.Logf("%s log:\n%s", name, b)
		}
	})
	return cmd
}

func (c *cluster) count(q string) int {
	var n int
	require.NoError(c.t, c.pool.QueryRow(context.Background(), q).Scan(&n))
	return n
}

func (c *cluster) waitCompleted(n int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for c.count(`SELECT count(*) FROM tasks.tasks WHERE status = 'COMPLETED'`) < n {
		if time.Now().After(deadline) {
			c.t.Fatalf("only %d of %d tasks completed in %v", c.count(`SELECT count(*) FROM tasks.tasks WHERE status = 'COMPLETED'`), n, timeout)
		}
		time.Sleep(100 * time.Millisecond) // wall time: real wf processes do the work
	}
}

// stop sends SIGTERM and checks the process exits 0.
func stop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
}

// TestThreeProcessesRunEachTaskOnce: three `wf run` processes share 5,000
// tasks; each task completes, and runs, exactly once.
func TestThreeProcessesRunEachTaskOnce(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.enqueue(5000)
	procs := []*exec.Cmd{c.start("a"), c.start("b"), c.start("c")}
	c.waitCompleted(5000, 3*time.Minute)
	for _, p := range procs {
		stop(t, p)
	}
	require.Equal(t, 5000, c.count(`SELECT count(*) FROM wf_test.executions`))
	require.Equal(t, 5000, c.count(`SELECT count(DISTINCT task_id) FROM wf_test.executions`))
	require.Equal(t, 0, c.count(`SELECT count(*) FROM tasks.tasks WHERE attempts <> 1`))
	// The work was shared.
	require.Equal(t, 3, c.count(`SELECT count(DISTINCT pid) FROM wf_test.executions`))
}

// TestKilledProcessLosesNothing: one of three processes is killed with
// SIGKILL mid-run. Every task still completes once its lease expires; a task
// ran twice only when the killed process had it in flight, and never while a
// live process held its lease.
func TestKilledProcessLosesNothing(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.enqueue(5000)
	a, b, victim := c.start("a"), c.start("b"), c.start("victim")
	// Wait until the victim has done some of the work, then kill it.
	deadline := time.Now().Add(2 * time.Minute)
	for c.count(fmt.Sprintf(`SELECT count(*) FROM wf_test.executions WHERE pid = %d`, victim.Process.Pid)) < 200 {
		require.True(t, time.Now().Before(deadline), "victim never ran tasks")
		time.Sleep(20 * time.Millisecond) // wall time: a real process and its sessions
	}
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	_ = victim.Wait()
	// A statement the victim had sent may still commit: count once its
	// sessions are gone.
	for c.count(`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wfrecord-victim'`) > 0 {
		require.True(t, time.Now().Before(deadline), "the victim's sessions never ended")
		time.Sleep(20 * time.Millisecond) // wall time: a real process and its sessions
	}
	inFlight := c.count(fmt.Sprintf(`SELECT count(*) FROM tasks.tasks WHERE status = 'ACTIVE' AND owner_id LIKE '%%-%d-%%'`, victim.Process.Pid))
	t.Logf("victim killed with %d tasks in flight", inFlight)

	c.waitCompleted(5000, 3*time.Minute)
	stop(t, a)
	stop(t, b)
	require.Equal(t, 5000, c.count(`SELECT count(DISTINCT task_id) FROM wf_test.executions`))
	// Every task that ran more than once was first run by the victim.
	require.Equal(t, 0, c.count(fmt.Sprintf(`
SELECT count(*) FROM (
    SELECT task_id FROM wf_test.executions GROUP BY task_id
    HAVING count(*) > 1 AND count(*) FILTER (WHERE pid <> %d) <> 1
) x`, victim.Process.Pid)))
	// Tasks claimed once ran once.
	require.Equal(t, 0, c.count(`
SELECT count(*) FROM tasks.tasks t
WHERE t.attempts = 1 AND (SELECT count(*) FROM wf_test.executions e WHERE e.task_id = t.task_id) <> 1`))
	// Exactly the tasks the victim held were rescued, each counting a retry.
	require.Equal(t, inFlight, c.count(`SELECT count(*) FROM tasks.tasks WHERE retry_count > 0`))
}

// string runs a query returning one text value.
func (c *cluster) string(q string) string {
	var s string
	require.NoError(c.t, c.pool.QueryRow(context.Background(), q).Scan(&s))
	return s
}
