package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/migrations"
)

func TestMigrateUpTwiceThenStatus(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyDatabase(t)
	cfg := writeConfig(t, "")

	code, out, errOut := runWF(t, "--config", cfg, "--database-url", url, "migrate", "status")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "current version: 0\n")
	latest := strings.TrimSpace(strings.TrimPrefix(lineWith(out, "latest version:"), "latest version:"))
	require.NotEqual(t, "0", latest)
	require.NotContains(t, out, "pending:         none")

	code, out, errOut = runWF(t, "--config", cfg, "--database-url", url, "migrate", "up")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "migrated to version "+latest+"\n", out)

	code, out, errOut = runWF(t, "--config", cfg, "--database-url", url, "migrate", "up")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "already at version "+latest+"\n", out)

	code, out, errOut = runWF(t, "--config", cfg, "--database-url", url, "migrate", "status")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "current version: "+latest+"\nlatest version:  "+latest+"\npending:         none\n", out)
}

func TestMigrateStatusListsPending(t *testing.T) {
	t.Parallel()
	code, out, errOut := runWF(t, "--config", writeConfig(t, ""), "--database-url", dbtest.NewEmptyDatabase(t), "migrate", "status")
	require.Equal(t, ExitOK, code, errOut)
	entries, err := migrations.FS.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			require.Contains(t, out, "\n  "+e.Name()+"\n")
		}
	}
}

func TestMigrateUnreachableDatabase(t *testing.T) {
	t.Parallel()
	code, out, errOut := runWF(t, "--config", writeConfig(t, ""),
		"--database-url", "postgres://wf:hunter2@127.0.0.1:1/wf?connect_timeout=5", "migrate", "status")
	require.Equal(t, ExitFailure, code)
	require.Empty(t, out)
	require.Equal(t, "wf: error connecting to PostgreSQL at 127.0.0.1:1 (database \"wf\", user \"wf\"): connection refused\n", errOut)
	require.NotContains(t, errOut, "hunter2")
}

func TestMigrateBadDatabaseURL(t *testing.T) {
	t.Parallel()
	code, _, errOut := runWF(t, "--config", writeConfig(t, ""), "--database-url", "mysql://u:hunter2@h/db", "migrate", "up")
	require.Equal(t, ExitUsage, code)
	require.Equal(t, "wf: usage: flag --database-url: expected postgres://user:password@host:port/database or key=value pairs, got a mysql:// URL\n", errOut)

	code, _, errOut = runWF(t, "--config", writeConfig(t, ""), "migrate", "up", "extra")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, `wf: usage: wf migrate up takes no arguments, got "extra"`)
}

// lineWith returns the first line of text that starts with prefix.
func lineWith(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}
