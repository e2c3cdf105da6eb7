package config

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecretKeys: the webhook secrets' keys come from secrets.keys in the
// file (inline, or <id>:file:<path> so the key is not in it), or from
// WF_SECRET_KEY (or WF_SECRETS_KEYS), which win over the file; a bad entry
// is an error pointing at the entry, never quoting a key; masked output
// hides inline keys and shows file references.
func TestSecretKeys(t *testing.T) {
	t.Parallel()
	keyA := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", 32)))
	keyB := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("b", 32)))
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "k2.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(keyB+"\n"), 0o600))

	file := writeFile(t, "secrets:\n  keys:\n    - k2:file:"+keyFile+"\n    - k1:"+keyA+"\n")
	c, err := Load(Options{File: file, LookupEnv: envOf(nil)})
	require.NoError(t, err)
	require.Equal(t, []string{"k2:file:" + keyFile, "k1:" + keyA}, c.Secrets.Keys)
	masked := c.Masked()
	require.Equal(t, []string{"k2:file:" + keyFile, "k1:" + Mask}, masked.Secrets.Keys)
	out, err := masked.MarshalJSON()
	require.NoError(t, err)
	require.NotContains(t, string(out), keyA)

	// The environment wins over the file, under either name.
	for _, name := range []string{"WF_SECRET_KEY", "WF_SECRETS_KEYS"} {
		c, err = Load(Options{File: file, LookupEnv: envOf(map[string]string{name: "k3:" + keyB + ", k2:file:" + keyFile})})
		require.NoError(t, err, name)
		require.Equal(t, []string{"k3:" + keyB, "k2:file:" + keyFile}, c.Secrets.Keys, name)
		require.Equal(t, SourceEnv, c.Origin("secrets.keys").Kind)
	}

	for content, want := range map[string]string{
		"secrets:\n  keys:\n    - k1:" + keyA + "\n    - k2:file:" + dir + "/missing\n": `wf.yaml:4:7: secrets.keys[1]: error reading key "k2" from ` + dir + `/missing: no such file or directory`,
		"secrets:\n  keys:\n    - k1:" + keyA + "\n    - k1:" + keyB + "\n":             `wf.yaml:4:7: secrets.keys[1]: key id "k1" appears twice`,
		"secrets:\n  keys:\n    - k1:c2hvcnQ=\n":                                        `wf.yaml:3:7: secrets.keys[0]: key "k1" is not the standard base64 of 32 bytes`,
		"secrets:\n  keys:\n    - " + keyA + "\n":                                       `wf.yaml:3:7: secrets.keys[0]: `,
	} {
		msg := loadErr(t, Options{File: writeFile(t, content)})
		require.Contains(t, msg, want, content)
		require.NotContains(t, msg, keyA)
		require.NotContains(t, msg, keyB)
	}
	msg := loadErr(t, Options{LookupEnv: envOf(map[string]string{"WF_SECRET_KEY": "k1:" + keyA + ",k2:nope"}), WorkDir: dir})
	require.Contains(t, msg, `environment variable WF_SECRET_KEY: secrets.keys[1]: key "k2" is not the standard base64 of 32 bytes`)
	require.NotContains(t, msg, keyA)
}
