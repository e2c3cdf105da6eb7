package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/engine/spec"
)

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

	code, out, errOut := runWF(t, "validate", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "ok: 2 task types, 1 subscription, 1 schedule, 0 runners in 2 files\n", out)
	require.Equal(t, noConfigNote, errOut)

	code, out, errOut = runWF(t, "validate", "--format", "json", dir)
	require.Equal(t, ExitOK, code, errOut)
	require.JSONEq(t, `{"valid": true, "files": 2, "task_types": 2, "subscriptions": 1, "schedules": 1, "runners": 0, "errors": [],
		"note": {"message": "`+noConfigMessage+`", "checks": ["`+spec.RuntimeChecks()[0]+`"]}}`, out)
	require.Empty(t, errOut)

	code, out, _ = runWF(t, "validate", "-f", "github", filepath.Join(dir, "a.yaml"))
	require.Equal(t, ExitOK, code)
	require.Equal(t, "ok: 1 task type, 1 subscription, 1 schedule, 0 runners in 1 file\n"+
		"::notice title=wf validate::"+noConfigMessage+": "+spec.RuntimeChecks()[0]+"\n", out)
}

// noConfigMessage and noConfigNote are what wf validate says when no
// configuration file was given (the tests run with none).
const (
	noConfigMessage = "no configuration file (--config FILE, $WF_CONFIG or ./wf.yaml): these checks used wf's defaults and WF_* variables (heartbeat_interval 30s, visibility_timeout 5m), not necessarily what wf run will use"
	noConfigNote    = "note: " + noConfigMessage + ":\n  - every task type's lease (its visibility_timeout, else the configured visibility_timeout) is at least twice heartbeat_interval\n"
)

// TestValidateConfig: with a configuration, specs are checked against it
// (a lease against its heartbeat_interval) and its specs are the default
// paths; without one, against the defaults, with a note saying so.
func TestValidateConfig(t *testing.T) {
	t.Parallel()
	specs := writeSpecs(t, map[string]string{"a.yaml": "kind: TaskType\nname: quick\nhandler: {builtin: noop}\nvisibility_timeout: 1m\n"})
	cfgDir := t.TempDir()
	cfgFile := filepath.Join(cfgDir, "wf.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("heartbeat_interval: 40s\nvisibility_timeout: 2m\nspecs: ["+specs+"]\n"), 0o644))
	want := filepath.Join(specs, "a.yaml") + ":4:21: visibility_timeout: must be at least twice heartbeat_interval (40s), 1m20s, or one late heartbeat loses the lease and wf run refuses to start; raise it to 1m20s or lower heartbeat_interval; got 1m\n"

	// Against the defaults (heartbeat 30s), 1m is enough; the note says
	// what was not checked against the real configuration.
	code, out, errOut := runWF(t, "validate", specs)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "ok: 1 task type, 0 subscriptions, 0 schedules, 0 runners in 1 file\n", out)
	require.Equal(t, noConfigNote, errOut)

	for _, args := range [][]string{
		{"validate", "--config", cfgFile},        // the configuration's specs
		{"validate", "--config", cfgFile, specs}, // named specs
		{"--config", cfgFile, "validate"},        // the global flag
		{"--config", cfgFile, "validate", "-f", "text"},
	} {
		code, out, errOut = runWF(t, args...)
		require.Equal(t, ExitFailure, code, "%v: %s", args, errOut)
		require.Equal(t, want, out, "%v", args)
		require.Equal(t, "wf: 1 error in 1 file\n", errOut, "%v", args)
	}

	code, _, errOut = runWF(t, "validate", "--config", filepath.Join(cfgDir, "missing.yaml"), specs)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "missing.yaml")
}

func TestValidateInvalid(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": invalidSpecYAML, "b.yaml": validSpecYAML})
	file := filepath.Join(dir, "a.yaml")

	t.Run("Text", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := runWF(t, "validate", dir)
		require.Equal(t, ExitFailure, code)
		require.Equal(t, file+`:3:20: handler.builtin: unknown builtin handler "nope"; did you mean "noop"?`+"\n"+
			file+":4:11: priority: must be <= 100; got 500\n", out)
		require.Equal(t, noConfigNote+"wf: 2 errors in 1 file\n", errOut)
	})

	t.Run("JSON", func(t *testing.T) {
		t.Parallel()
		code, out, _ := runWF(t, "validate", "--format=json", dir)
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
		code, out, _ := runWF(t, "validate", "--format", "github", odd)
		require.Equal(t, ExitFailure, code)
		require.Equal(t, "::error file="+escapeGitHubProperty(filepath.Join(odd, "x,y.yaml"))+
			",line=4,col=8::scope: must be one of CATALOG, SYSTEM, ASSET; got \"100%25\"\n"+
			"::notice title=wf validate::"+noConfigMessage+": "+spec.RuntimeChecks()[0]+"\n", out)
		require.Contains(t, out, "x%2Cy.yaml")
	})
}

func TestValidateUsageAndReadErrors(t *testing.T) {
	t.Parallel()
	dir := writeSpecs(t, map[string]string{"a.yaml": validSpecYAML})

	code, out, errOut := runWF(t, "validate", "--format", "xml", dir)
	require.Equal(t, ExitUsage, code)
	require.Empty(t, out)
	require.Equal(t, "wf: usage: --format must be one of text, json, github; got \"xml\"\n", errOut)

	code, _, _ = runWF(t, "validate", "--no-such-flag", dir)
	require.Equal(t, ExitUsage, code)

	code, _, errOut = runWF(t, "validate", dir, "--format", "json")
	require.Equal(t, ExitUsage, code)
	require.Equal(t, "wf: usage: flag --format after a PATH: put flags before the paths (wf validate --format PATH...)\n", errOut)

	missing := filepath.Join(dir, "missing")
	code, out, errOut = runWF(t, "validate", missing)
	require.Equal(t, ExitFailure, code)
	require.Empty(t, out)
	require.Equal(t, "wf: error reading specs: "+missing+" does not exist\n", errOut)

	empty := t.TempDir()
	code, _, errOut = runWF(t, "validate", empty)
	require.Equal(t, ExitFailure, code)
	require.Equal(t, "wf: error reading specs: no *.yaml or *.yml files in "+empty+"\n", errOut)
}

// TestValidateDefaultPath runs from the repository root, where specs/ is
// the default PATH; it cannot run in parallel because it changes directory.
func TestValidateDefaultPath(t *testing.T) {
	t.Chdir("..")
	code, out, errOut := runWF(t, "validate")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "ok: ")
	// Every file of specs/ counts (the shipped catalog grows).
	require.Regexp(t, ` in [0-9]+ files\n$`, out)

	code, out, errOut = runWF(t, "compile")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "specs/testing.yaml")
}
