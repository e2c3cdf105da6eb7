package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// runSpecCLI runs wf in-process with args and returns the exit code, stdout
// and stderr.
func runSpecCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), append([]string{"wf"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeSpecs writes spec files (name → content) in a new folder and returns it.
func writeSpecs(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

const validSpecYAML = `kind: TaskType
name: noop
handler: {builtin: noop}
---
kind: Subscription
name: on-created
event_type: catalog.*
task_type: noop
---
kind: Schedule
name: hourly
cron: "@hourly"
task_type: noop
`

const invalidSpecYAML = `kind: TaskType
name: broken
handler: {builtin: nope}
priority: 500
`

func TestValidateValid(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": validSpecYAML, "sub/b.yml": "kind: TaskType\nname: other\nhandler: {builtin: sleep}\n"})

	code, out, errOut := runSpecCLI(t, "validate", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "ok: 2 task types, 1 subscription, 1 schedule, 0 runners in 2 files\n", out)
	require.Empty(t, errOut)

	code, out, errOut = runSpecCLI(t, "validate", "--format", "json", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.JSONEq(t, `{"valid": true, "files": 2, "task_types": 2, "subscriptions": 1, "schedules": 1, "runners": 0, "errors": []}`, out)

	code, out, _ = runSpecCLI(t, "validate", "-f", "github", filepath.Join(dir, "a.yaml"))
	require.Equal(t, ExitOK, code)
	require.Equal(t, "ok: 1 task type, 1 subscription, 1 schedule, 0 runners in 1 file\n", out)
}

func TestValidateInvalid(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": invalidSpecYAML, "b.yaml": validSpecYAML})
	file := filepath.Join(dir, "a.yaml")

	t.Run("Text", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := runSpecCLI(t, "validate", dir)
		require.Equal(t, ExitFailure, code)
		require.Equal(t, file+`:3:20: handler.builtin: unknown builtin handler "nope"; did you mean "noop"?`+"\n"+
			file+":4:11: priority: must be <= 100; got 500\n", out)
		require.Equal(t, "wf: 2 errors in 1 file\n", errOut)
	})

	t.Run("JSON", func(t *testing.T) {
		t.Parallel()
		code, out, _ := runSpecCLI(t, "validate", "--format=json", dir)
		require.Equal(t, ExitFailure, code)
		var got validateJSON
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		require.False(t, got.Valid)
		require.Equal(t, 2, got.Files)
		require.Equal(t, []errorJSON{
			{File: file, Line: 3, Col: 20, Message: `handler.builtin: unknown builtin handler "nope"; did you mean "noop"?`},
			{File: file, Line: 4, Col: 11, Message: "priority: must be <= 100; got 500"},
		}, got.Errors)
	})

	t.Run("GitHub", func(t *testing.T) {
		t.Parallel()
		odd := writeSpecs(t, map[string]string{"x,y.yaml": "kind: TaskType\nname: t\nhandler: {builtin: noop}\nscope: '100%'\n"})
		code, out, _ := runSpecCLI(t, "validate", "--format", "github", odd)
		require.Equal(t, ExitFailure, code)
		require.Equal(t, "::error file="+escapeGitHubProperty(filepath.Join(odd, "x,y.yaml"))+
			",line=4,col=8::scope: must be one of CATALOG, SYSTEM, ASSET; got \"100%25\"\n", out)
		require.Contains(t, out, "x%2Cy.yaml")
	})
}

func TestValidateUsageAndReadErrors(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": validSpecYAML})

	code, out, errOut := runSpecCLI(t, "validate", "--format", "xml", dir)
	require.Equal(t, ExitUsage, code)
	require.Empty(t, out)
	require.Equal(t, "wf: usage: --format must be one of text, json, github; got \"xml\"\n", errOut)

	code, _, _ = runSpecCLI(t, "validate", "--no-such-flag", dir)
	require.Equal(t, ExitUsage, code)

	code, _, errOut = runSpecCLI(t, "validate", dir, "--format", "json")
	require.Equal(t, ExitUsage, code)
	require.Equal(t, "wf: usage: flag --format after a PATH: put flags before the paths (wf validate --format PATH...)\n", errOut)

	missing := filepath.Join(dir, "missing")
	code, out, errOut = runSpecCLI(t, "validate", missing)
	require.Equal(t, ExitFailure, code)
	require.Empty(t, out)
	require.Equal(t, "wf: error reading specs: "+missing+" does not exist\n", errOut)

	empty := t.TempDir()
	code, _, errOut = runSpecCLI(t, "validate", empty)
	require.Equal(t, ExitFailure, code)
	require.Equal(t, "wf: error reading specs: no *.yaml or *.yml files in "+empty+"\n", errOut)
}

// TestValidateDefaultPath runs from the repository root, where specs/ is
// the default PATH; it cannot run in parallel because it changes directory.
func TestValidateDefaultPath(t *testing.T) {
	t.Chdir("..")
	code, out, errOut := runSpecCLI(t, "validate")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "ok: ")
	// Every file of specs/ counts (the shipped catalog grows).
	require.Regexp(t, ` in [0-9]+ files\n$`, out)

	code, out, errOut = runSpecCLI(t, "compile")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "specs/testing.yaml")
}
