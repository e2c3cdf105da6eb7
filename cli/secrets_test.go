package cli

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbtest"
)

// TestSecretsRotateAndStartCheck: a secret added without a key is stored
// clear; wf secrets rotate needs a key, then encrypts it (the fingerprint
// wf shows stays the same); a second rotation changes nothing; wf run
// without the key refuses to start on that database, naming WF_SECRET_KEY.
// Not parallel: it sets WF_SECRET_KEY.
func TestSecretsRotateAndStartCheck(t *testing.T) {
	url := dbtest.NewDatabase(t)
	pool := dbtest.PoolFor(t, url)
	specs, err := filepath.Abs("../specs")
	require.NoError(t, err)
	cfg := writeConfig(t, "outbound: {allow: [127.0.0.0/8]}\nspecs: ["+specs+"]\n")
	secretFile := filepath.Join(t.TempDir(), "secret")
	const secret = "very-secret-signing-key-0123456789"
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	wf := func(args ...string) (int, string, string) {
		t.Helper()
		return runWF(t, append([]string{"--config", cfg, "--database-url", url}, args...)...)
	}
	stored := func() string {
		var s string
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT secret FROM tasks.webhook_subscribers`).Scan(&s))
		return s
	}
	t.Setenv("WF_SECRET_KEY", "")
	code, _, errOut := wf("webhooks", "add", "--url", "http://127.0.0.1:9/hook", "--event", "catalog.*", "--secret-file", secretFile)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, secret, stored())
	code, listed, errOut := wf("webhooks", "list")
	require.Equal(t, ExitOK, code, errOut)

	code, _, errOut = wf("secrets", "rotate")
	require.Equal(t, ExitUsage, code, errOut)
	require.Contains(t, errOut, "WF_SECRET_KEY")

	// A malformed key is a configuration error, as any other.
	t.Setenv("WF_SECRET_KEY", "bad")
	code, _, errOut = wf("secrets", "rotate")
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, "environment variable WF_SECRET_KEY: secrets.keys[0]: not <id>:<base64 key>")

	t.Setenv("WF_SECRET_KEY", "k1:"+base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))))
	code, out, errOut := wf("secrets", "rotate")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "re-encrypted 1 ")
	require.True(t, strings.HasPrefix(stored(), "v1:k1:"))
	require.NotContains(t, stored(), secret)
	code, out, errOut = wf("secrets", "rotate")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "re-encrypted 0 ")
	code, out, errOut = wf("webhooks", "list")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, listed, out, "the fingerprint is the clear secret's")

	t.Setenv("WF_SECRET_KEY", "")
	code, _, errOut = wf("run", "--listen", "127.0.0.1:0")
	require.Equal(t, ExitFailure, code, errOut)
	require.Contains(t, errOut, "encrypted but no key is configured; set secrets.keys (or WF_SECRET_KEY)")
}

// TestSecretKeysFromTheConfiguration: the keys may come from wf.yaml's
// secrets.keys, the key itself in a file of its own (<id>:file:<path>):
// wf validate --config checks the entries (a missing file is an error
// naming secrets.keys[0] and the file's line), wf config show prints the
// file reference but never an inline key, and webhooks are stored sealed
// under the configured key, readable by a wf that gets the same key
// through WF_SECRET_KEY. Not parallel: it sets WF_SECRET_KEY.
func TestSecretKeysFromTheConfiguration(t *testing.T) {
	url := dbtest.NewDatabase(t)
	pool := dbtest.PoolFor(t, url)
	specs, err := filepath.Abs("../specs")
	require.NoError(t, err)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "wf-k7.key")
	oldKey := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("o", 32)))
	cfg := writeConfig(t, "outbound: {allow: [127.0.0.0/8]}\nspecs: ["+specs+"]\nsecrets:\n  keys:\n    - k7:file:"+keyFile+"\n    - k6:"+oldKey+"\n")
	t.Setenv("WF_SECRET_KEY", "")

	code, _, errOut := runWF(t, "validate", "--config", cfg)
	require.NotEqual(t, ExitOK, code)
	require.Contains(t, errOut, "wf.yaml:5:7: secrets.keys[0]: error reading key \"k7\" from "+keyFile+": no such file or directory")

	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("7", 32)))
	require.NoError(t, os.WriteFile(keyFile, []byte(key+"\n"), 0o600))
	code, _, errOut = runWF(t, "validate", "--config", cfg)
	require.Equal(t, ExitOK, code, errOut)
	code, shown, errOut := runWF(t, "--config", cfg, "config", "show")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, shown, "k7:file:"+keyFile)
	require.Contains(t, shown, "k6:***")
	require.NotContains(t, shown, oldKey)

	secretFile := filepath.Join(dir, "secret")
	const secret = "signing-secret-from-the-config-0123"
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	code, _, errOut = runWF(t, "--config", cfg, "--database-url", url, "webhooks", "add", "--url", "http://127.0.0.1:9/hook", "--event", "catalog.*", "--secret-file", secretFile)
	require.Equal(t, ExitOK, code, errOut)
	var stored string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT secret FROM tasks.webhook_subscribers`).Scan(&stored))
	require.True(t, strings.HasPrefix(stored, "v1:k7:"), stored)
	require.NotContains(t, stored, secret)
	code, listed, errOut := runWF(t, "--config", cfg, "--database-url", url, "webhooks", "list")
	require.Equal(t, ExitOK, code, errOut)
	require.NotContains(t, listed, "unreadable")

	// The same key through the environment (which wins over the file)
	// reads it; another key does not.
	t.Setenv("WF_SECRET_KEY", "k7:"+key)
	code, out, errOut := runWF(t, "--config", cfg, "--database-url", url, "webhooks", "list")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, listed, out)
	t.Setenv("WF_SECRET_KEY", "k8:"+oldKey)
	code, out, errOut = runWF(t, "--config", cfg, "--database-url", url, "webhooks", "list")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "unreadable (key not configured)")
}
