package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/localpg"
)

// TestFirstContactLocal: in a folder where wf never ran, the read-only
// commands say that no local database exists (and create none); the first
// command that writes creates the cluster and applies the migrations, after
// which the readers see its rows. As root the data folder is t.TempDir's
// (mode 0700), which the server's user cannot reach: the cluster lives
// elsewhere, and the commands work all the same.
func TestFirstContactLocal(t *testing.T) {
	t.Parallel()
	if _, err := localpg.FindBinDir(); err != nil {
		t.Skip(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	specs := writeSpecs(t, map[string]string{"noop.yaml": "kind: TaskType\nname: noop\nhandler: {builtin: noop}\n"})
	config := writeConfig(t, fmt.Sprintf("data_dir: %q\nspecs: [%q]\nlog_level: warn\n", data, specs))
	pgDir, _, err := localpg.Place(filepath.Join(data, "pg"), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(pgDir) }) // under /var/lib/wf when moved

	id, err := uuid.NewV7()
	require.NoError(t, err)
	for _, args := range [][]string{{"tasks", "list"}, {"tasks", "show", id.String()}, {"events", "list"}} {
		code, _, errOut := runWF(t, append([]string{"--config", config}, args...)...)
		require.Equal(t, ExitFailure, code, args)
		require.Contains(t, errOut, "no local database exists yet in "+data+": start one with `wf run`", args)
		require.NoDirExists(t, pgDir, "a reader created a cluster")
	}

	code, out, errOut := runWF(t, "--config", config, "enqueue", "noop")
	require.Equal(t, ExitOK, code, errOut)
	require.NotContains(t, errOut, "SQLSTATE")
	require.FileExists(t, filepath.Join(pgDir, "PG_VERSION"))
	code, list, errOut := runWF(t, "--config", config, "tasks", "list")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, list, "noop")
	require.Contains(t, out, "PENDING")
}

// TestFirstContactURL: a database given by URL that has no wf schema (or an
// older one) is not migrated behind its operator's back: every command that
// needs the schema says so and what to run, never a raw SQLSTATE.
func TestFirstContactURL(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyDatabase(t)
	specs := writeSpecs(t, map[string]string{"noop.yaml": "kind: TaskType\nname: noop\nhandler: {builtin: noop}\n"})
	config := writeConfig(t, fmt.Sprintf("database_url: %q\ndata_dir: %q\nspecs: [%q]\nlog_level: warn\n", url, t.TempDir(), specs))
	id, err := uuid.NewV7()
	require.NoError(t, err)
	for _, args := range [][]string{
		{"tasks", "list"}, {"tasks", "show", id.String()}, {"tasks", "cancel", id.String()},
		{"enqueue", "noop"}, {"events", "list"}, {"webhooks", "list"},
	} {
		code, _, errOut := runWF(t, append([]string{"--config", config}, args...)...)
		require.Equal(t, ExitFailure, code, args)
		require.Regexp(t, "^wf: the database at 127.0.0.1:[0-9]+/wf_empty_[0-9a-f]+ has no wf schema; run `wf migrate up`\n$", errOut, args)
	}
	code, _, errOut := runWF(t, "--config", config, "migrate", "up")
	require.Equal(t, ExitOK, code, errOut)
	code, _, errOut = runWF(t, "--config", config, "enqueue", "noop")
	require.Equal(t, ExitOK, code, errOut)
}
