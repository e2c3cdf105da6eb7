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

	t.Setenv("WF_SECRET_KEY", "bad")
	code, _, errOut = wf("secrets", "rotate")
	require.Equal(t, ExitUsage, code, errOut)

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
	require.Contains(t, errOut, "encrypted but WF_SECRET_KEY is not set")
}
