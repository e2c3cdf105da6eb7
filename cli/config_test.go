package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/wfhq/wf/config"
)

// runWF runs wf in-process with args and returns the exit code, stdout and
// stderr.
func runWF(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), append([]string{"wf"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeConfig writes a wf.yaml in a new folder and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wf.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestConfigShowMasksSecrets(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `database_url: postgres://wf:hunter2@db.example:5432/wf
tokens:
  - name: ci
    role: client
    catalogs: [c1]
    token: plain-token-0123456789
`)
	code, out, errOut := runWF(t, "--config", path, "config", "show")
	require.Equal(t, ExitOK, code, errOut)
	require.NotContains(t, out, "hunter2")
	require.NotContains(t, out, "plain-token-0123456789")
	require.NotContains(t, out, config.HashToken("plain-token-0123456789"))
	require.Contains(t, out, "# configuration file: "+path+"\n")
	require.Contains(t, out, "database_url: postgres://wf:***@db.example:5432/wf\n")

	var shown map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(out), &shown))
	require.Equal(t, []any{map[string]any{"name": "ci", "role": "client", "catalogs": []any{"c1"}, "token_sha256": "***"}}, shown["tokens"])
	require.Equal(t, "wf", shown["name"])
	require.Equal(t, "30s", shown["heartbeat_interval"])

	code, out, errOut = runWF(t, "--config", path, "config", "show", "--format", "json")
	require.Equal(t, ExitOK, code, errOut)
	require.NotContains(t, out, "hunter2")
	require.NoError(t, json.Unmarshal([]byte(out), &shown))
	require.Equal(t, "postgres://wf:***@db.example:5432/wf", shown["database_url"])
	require.Equal(t, "720h", shown["retention"].(map[string]any)["completed"])
}

// TestConfigShowReflectsEnvAndFlags sets environment variables, so it
// cannot run in parallel.
func TestConfigShowReflectsEnvAndFlags(t *testing.T) {
	path := writeConfig(t, "name: from-file\nslots: 3\nlog_level: warn\n")
	t.Setenv("WF_NAME", "from-env")
	t.Setenv("WF_SLOTS", "7")
	t.Setenv("WF_RETENTION_COMPLETED", "48h")
	t.Setenv("WF_DATABASE_URL", "postgres://wf:env-secret@db.example/wf")
	t.Setenv("WF_CONFIG", path)

	code, out, errOut := runWF(t, "--name", "from-flag", "--log-level", "debug", "--data-dir", "/srv/wf", "config", "show")
	require.Equal(t, ExitOK, code, errOut)
	require.NotContains(t, out, "env-secret")
	var shown map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(out), &shown))
	require.Equal(t, "from-flag", shown["name"])   // flag > env > file
	require.Equal(t, "debug", shown["log_level"])  // flag > file
	require.Equal(t, 7, shown["slots"])            // env > file
	require.Equal(t, "/srv/wf", shown["data_dir"]) // flag > default
	require.Equal(t, "48h", shown["retention"].(map[string]any)["completed"])
	require.Equal(t, "postgres://wf:***@db.example/wf", shown["database_url"])
	require.Equal(t, "file:///srv/wf/reports", shown["report"].(map[string]any)["bucket_url"])

	// A bad value from the environment is a configuration error: exit 1,
	// naming the variable.
	t.Setenv("WF_SLOTS", "many")
	code, _, errOut = runWF(t, "config", "show")
	require.Equal(t, ExitFailure, code)
	require.Equal(t, "wf: environment variable WF_SLOTS: expected a whole number, got \"many\"\n", errOut)
}

func TestConfigShowUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "verbose", "config", "show"}, `wf: usage: flag --log-level: expected one of debug, info, warn, error, got "verbose"`},
		{[]string{"--log-format", "xml", "config", "show"}, `wf: usage: flag --log-format: expected one of auto, text, json, got "xml"`},
		{[]string{"--name", "", "config", "show"}, "wf: usage: flag --name: must not be empty"},
		{[]string{"config", "show", "--format", "xml"}, `wf: usage: --format must be yaml or json, got "xml"`},
		{[]string{"config", "show", "extra"}, `wf: usage: config show takes no arguments, got "extra"`},
		{[]string{"--no-such-flag", "config", "show"}, "wf: usage: flag provided but not defined: -no-such-flag"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			path := writeConfig(t, "")
			code, out, errOut := runWF(t, append([]string{"--config", path}, tc.args...)...)
			require.Equal(t, ExitUsage, code, out+errOut)
			require.Contains(t, errOut, tc.want)
		})
	}
}

func TestConfigShowFileError(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "nme: x\nslots: 0\n")
	code, out, errOut := runWF(t, "--config", path, "config", "show")
	require.Equal(t, ExitFailure, code)
	require.Empty(t, out)
	require.Equal(t, "wf: invalid configuration:\n"+
		"  "+path+`:1:1: nme: unknown field; did you mean "name"?`+"\n"+
		"  "+path+":2:8: slots: must be at least 1, got 0\n", errOut)

	code, _, errOut = runWF(t, "--config", filepath.Join(t.TempDir(), "missing.yaml"), "config", "show")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "missing.yaml: cannot read the configuration file named by --config: no such file or directory")
}
