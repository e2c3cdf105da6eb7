package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/engine/clock"
)

// TestPythonClient runs the Python client's unittest suite
// (clients/python/tests) against a real `wf run` on loopback: the client's
// calls, its asyncio twin, the exec-handler helper as the handler of real
// task types (records, outputs, permanent and retryable failures, snooze),
// and webhook verification of signatures made by wf's own signer in both
// schemes.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python client's tests (clients/python) need it")
	}
	root, err := filepath.Abs("../clients/python")
	require.NoError(t, err)
	handler := filepath.Join(root, "tests", "handler_example.py")
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
	addr := freeAddr(t)
	const admin, client = "py-admin-token-0123456789", "py-client-token-0123456789"
	cfg := fmt.Sprintf("database_url: %q\ndata_dir: %q\nspecs: [%q, %q]\nlog_format: json\nlog_level: warn\n"+
		"outbound: {allow: [127.0.0.0/8]}\ntokens:\n  - {name: admin, role: admin, token: %q}\n  - {name: client, role: client, token: %q}\n",
		e.url, e.data, repoSpecs, e.specs, admin, client)
	require.NoError(t, os.WriteFile(e.config, []byte(cfg), 0o600))

	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- MainWith(ctx, append(e.global(), "run", "--listen", addr, "--poll-interval", "100ms",
			"--heartbeat-interval", "300ms", "--grace", "5s"), &syncBuffer{}, &errOut, e.opts)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != ExitOK || t.Failed() {
				t.Logf("wf run exited %d:\n%s", code, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("wf run did not stop within 30s:\n%s", errOut.String())
		}
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 60*time.Second, 50*time.Millisecond, "wf run did not become ready: %s", &errOut)

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

	cmd := exec.CommandContext(t.Context(), python, "-m", "unittest", "discover", "-v", "-s", "tests")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "WF_URL="+base, "WF_ADMIN_TOKEN="+admin, "WF_CLIENT_TOKEN="+client,
		"WF_WEBHOOK_VECTORS="+vectorsFile, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest:\n%s", out)
	require.NoError(t, err, "the Python client's tests failed")
	require.NotContains(t, string(out), "skipped", "every Python test ran against the server")
}
