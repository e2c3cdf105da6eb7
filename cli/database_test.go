package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/localpg"
)

// TestOpenDatabaseLocal starts the local cluster of a data folder, reuses
// it from a second opener while it runs, and stops it only when its starter
// is done.
func TestOpenDatabaseLocal(t *testing.T) {
	t.Parallel()
	if _, err := localpg.FindBinDir(); err != nil {
		t.Skip(err)
	}
	// The server may run as another user (as root): the folder must be
	// reachable, which t.TempDir's is not.
	dir, err := os.MkdirTemp("", "wf-cli-local-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))

	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "data")

	pool, cleanup, err := openDatabase(ctx, cfg, logger, accessSchema)
	require.NoError(t, err)
	var db string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	require.Equal(t, "wf", db)
	pidFile := filepath.Join(cfg.DataDir, "pg", "postmaster.pid")
	require.FileExists(t, pidFile)

	// A second opener (wf migrate status next to wf run) reuses the
	// running cluster and leaves it running.
	var logs bytes.Buffer
	pool2, cleanup2, err := openDatabase(ctx, cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), accessSchema)
	require.NoError(t, err)
	require.Contains(t, logs.String(), "using the local PostgreSQL already running")
	st, err := migrateDatabase(ctx, cfg, pool2)
	require.NoError(t, err)
	require.True(t, st.UpToDate())
	cleanup2()
	require.NoError(t, pool.Ping(ctx))
	require.FileExists(t, pidFile)

	cleanup()
	require.NoFileExists(t, pidFile)

	// The data survives a restart, through the command line.
	code, out, errOut := runWF(t, "--config", writeConfig(t, ""), "--data-dir", cfg.DataDir, "migrate", "up")
	require.Equal(t, ExitOK, code, errOut)
	require.True(t, strings.HasPrefix(out, "already at version "), out)
	require.NoFileExists(t, pidFile)
}

// TestSessionSettingsReceiveNotifications: a connection opened with the
// settings connectSession returns gets its own notifications. It returned a
// connected conn's settings, whose notification handler fed that (closed)
// conn's buffer: the leader's LISTEN received nothing and the leader
// crashed on the empty wait (TestBehindPgBouncerTransactionMode, once).
func TestSessionSettingsReceiveNotifications(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := dbtest.NewEmptyDatabase(t)
	cc, err := connectSession(ctx, url)
	require.NoError(t, err)
	conn, err := pgx.ConnectConfig(ctx, cc)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `LISTEN wf_session_test`)
	require.NoError(t, err)
	other, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer other.Close(context.WithoutCancel(ctx))
	_, err = other.Exec(ctx, `NOTIFY wf_session_test, 'hello'`)
	require.NoError(t, err)
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := conn.WaitForNotification(wait)
	require.NoError(t, err)
	require.NotNil(t, n, "the notification reached this connection")
	require.Equal(t, "hello", n.Payload)
}

// TestDatabaseURLExecModes: the exec modes that send parameters without the
// server's types are refused before anything runs, with the modes that
// work named; the others connect. (With simple_protocol every enqueue
// failed: "unable to encode []uuid.UUID … into text format".)
func TestDatabaseURLExecModes(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	ctx := context.Background()
	for _, mode := range []string{"exec", "simple_protocol"} {
		_, err := connectPool(ctx, url+sep+"default_query_exec_mode="+mode, false)
		require.ErrorContains(t, err, "default_query_exec_mode="+mode+" is not supported", mode)
		require.ErrorContains(t, err, "cache_describe or describe_exec", mode)
		code, _, errOut := runWF(t, "--config", writeConfig(t, ""), "--database-url", url+sep+"default_query_exec_mode="+mode, "tasks", "list")
		require.NotEqual(t, ExitOK, code, mode)
		require.Contains(t, errOut, "default_query_exec_mode="+mode+" is not supported", mode)
	}
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec"} {
		pool, err := connectPool(ctx, url+sep+"default_query_exec_mode="+mode, false)
		require.NoError(t, err, mode)
		pool.Close()
	}
}
