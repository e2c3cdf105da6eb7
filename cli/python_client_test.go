package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/internal/inproc"
)

// TestPythonClient runs the Python client's unittest suite
// (clients/python/tests) against a real `wf run` on loopback: the client's
// calls, its asyncio twin, the exec-handler helper as the handler of real
// task types (records, outputs, permanent and retryable failures, snooze),
// and webhook verification of signatures made by wf's own signer in both
// schemes.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	python, tests, version := installPythonClient(t)
	handler := filepath.Join(tests, "handler_example.py")
	e := newWFEnv(t, map[string]string{"py.yaml": fmt.Sprintf(`
kind: TaskType
name: py_echo
description: An exec handler written with the Python helper.
handler: {exec: {command: [%[1]q, %[2]q]}}
api: {create: [client, admin]}
backoff: {base: 10ms, factor: 1, max: 10ms, jitter: 0}
---
kind: TaskType
name: py_crash
description: The same handler, failing with an exception (retried, then dead-lettered).
handler: {exec: {command: [%[1]q, %[2]q]}}
max_retries: 0
`, python, handler)})
	repoSpecs, err := filepath.Abs("../specs")
	require.NoError(t, err)
	addr := inproc.FreeAddr(t)
	const admin, client = "py-admin-token-0123456789", "py-client-token-0123456789"
	cfg := fmt.Sprintf("database_url: %q\ndata_dir: %q\nspecs: [%q, %q]\nlog_format: json\nlog_level: warn\n"+
		"outbound: {allow: [127.0.0.0/8]}\ntokens:\n  - {name: admin, role: admin, token: %q}\n  - {name: client, role: client, token: %q}\n",
		e.url, e.data, repoSpecs, e.specs, admin, client)
	require.NoError(t, os.WriteFile(e.config, []byte(cfg), 0o600))

	errOut := inproc.Start(t, "wf run", func(ctx context.Context, stdout, stderr io.Writer) int {
		return MainWith(ctx, append(e.global(), "run", "--listen", addr, "--poll-interval", "100ms",
			"--heartbeat-interval", "300ms", "--grace", "5s"), stdout, stderr, e.opts)
	})
	base := "http://" + addr
	inproc.WaitReady(t, base, errOut)

	// Signatures made by wf's signer, for the Python verifiers.
	const wfSecret, stdSecret = "py-webhook-secret-0123456789", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := strconv.FormatInt(clock.Now().Unix(), 10)
	body := `{"event_type":"catalog.created","payload":{"catalog_id":"x"}}`
	key, err := webhooks.StandardKey(stdSecret)
	require.NoError(t, err)
	vectors, err := json.Marshal(map[string]string{
		"body": body, "timestamp": ts, "id": "msg_01890000",
		"wf_secret": wfSecret, "wf_signature": webhooks.Sign([]byte(wfSecret), ts, []byte(body)),
		"standard_secret": stdSecret, "standard_signature": webhooks.SignStandard(key, "msg_01890000", ts, []byte(body)),
	})
	require.NoError(t, err)
	vectorsFile := filepath.Join(t.TempDir(), "vectors.json")
	require.NoError(t, os.WriteFile(vectorsFile, vectors, 0o600))

	cmd := exec.CommandContext(t.Context(), python, "-m", "unittest", "discover", "-v", "-s", tests)
	cmd.Dir = filepath.Dir(tests)
	cmd.Env = append(os.Environ(), "WF_URL="+base, "WF_ADMIN_TOKEN="+admin, "WF_CLIENT_TOKEN="+client,
		"WF_WEBHOOK_VECTORS="+vectorsFile, "PYTHONDONTWRITEBYTECODE=1",
		"WF_CLIENT_INSTALLED=1", "WF_CLIENT_VERSION="+version)
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest:\n%s", out)
	require.NoError(t, err, "the Python client's tests failed")
	require.NotContains(t, string(out), "skipped", "every Python test ran against the server")
}

// installPythonClient installs clients/python as a user would, with
// `pip install` into a fresh, plain virtual environment (`python3 -m venv`,
// no --system-site-packages), offline (--no-index, no find-links and no pip
// configuration: no package index is reachable from our machines). The
// package's build backend is its own (backend/wf_build.py, standard library
// only), so the install needs neither setuptools nor wheel: the test removes
// the setuptools that some Pythons' venvs bring, to prove it. It returns the
// environment's interpreter, a copy of the unittest suite kept apart from the
// package's source (so only the installed copy can be imported) and the
// version pyproject.toml declares.
//
// Without an interpreter that can make a virtual environment with pip the
// test is skipped, unless WF_TEST_REQUIRE_PYTHON is set (make test sets it):
// then it fails.
func installPythonClient(t *testing.T) (python, tests, version string) {
	t.Helper()
	base := pythonWithVenv(t)
	if base == "" {
		const why = "no python3 that makes a virtual environment with pip (Debian: python3-venv; make test installs it)"
		if os.Getenv("WF_TEST_REQUIRE_PYTHON") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	root, err := filepath.Abs("../clients/python")
	require.NoError(t, err)
	project, err := os.ReadFile(filepath.Join(root, "pyproject.toml"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^version\s*=\s*"([^"]+)"`).FindSubmatch(project)
	require.NotNil(t, m, "pyproject.toml declares no version")
	version = string(m[1])

	// A copy of the package without its tests, and the tests apart, so that
	// parallel runs never share a folder and the tests import the installed
	// package only.
	dir := t.TempDir()
	src, tests := filepath.Join(dir, "src"), filepath.Join(dir, "tests")
	require.NoError(t, os.CopyFS(src, os.DirFS(root)))
	require.NoError(t, os.RemoveAll(filepath.Join(src, "tests")))
	require.NoError(t, os.CopyFS(tests, os.DirFS(filepath.Join(root, "tests"))))

	venv := filepath.Join(dir, "venv")
	run := func(name string, args ...string) string {
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Dir = dir
		cmd.Env = offlinePipEnv()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, out)
		return string(out)
	}
	run(base, "-m", "venv", venv)
	python = filepath.Join(venv, "bin", "python")
	run(python, "-m", "pip", "uninstall", "--yes", "setuptools", "wheel")
	run(python, "-m", "pip", "install", "--no-index", "--no-cache-dir", src)
	// The build used nothing but the standard library: no setuptools in the
	// environment, and the package's metadata is the one pyproject.toml says.
	out := run(python, "-c", "import importlib.util as u, importlib.metadata as m; "+
		"print(u.find_spec('setuptools') is None, m.version('wf-client'), m.metadata('wf-client')['Requires-Python'])")
	require.Equal(t, "True "+version+" >=3.9\n", out)
	return python, tests, version
}

// offlinePipEnv is this process's environment for pip with no
// configuration that could reach for packages: no configuration file, no
// PIP_* variable (a machine's PIP_FIND_LINKS would hand pip a wheel folder),
// no version check, no bytecode written into the source copy.
func offlinePipEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PIP_") {
			env = append(env, kv)
		}
	}
	return append(env, "PIP_CONFIG_FILE="+os.DevNull, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1")
}

// pythonWithVenv returns the first python3 that can make a virtual
// environment with pip in it (WF_TEST_PYTHON, python3 on the PATH, Debian's
// /usr/bin/python3), or "" when there is none.
func pythonWithVenv(t *testing.T) string {
	candidates := []string{os.Getenv("WF_TEST_PYTHON")}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/python3")
	for _, p := range candidates {
		if p == "" {
			continue
		}
		cmd := exec.CommandContext(t.Context(), p, "-c", "import venv, ensurepip")
		if cmd.Run() == nil {
			return p
		}
	}
	return ""
}
