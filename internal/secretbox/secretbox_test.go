package secretbox_test

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/secretbox"
)

func key(b byte) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), 32)))
}

func TestRoundTrip(t *testing.T) {
	k, err := secretbox.Parse("k1:" + key('a'))
	require.NoError(t, err)
	s, err := k.Seal("hunter2-hunter2-hunter2")
	require.NoError(t, err)
	require.True(t, secretbox.IsSealed(s))
	require.Equal(t, "k1", secretbox.KeyID(s))
	require.NotContains(t, s, "hunter2")
	s2, err := k.Seal("hunter2-hunter2-hunter2")
	require.NoError(t, err)
	require.NotEqual(t, s, s2, "a fresh nonce each time")
	got, err := k.Open(s)
	require.NoError(t, err)
	require.Equal(t, "hunter2-hunter2-hunter2", got)
	// Clear text stored before encryption reads as itself.
	got, err = k.Open("clear-secret")
	require.NoError(t, err)
	require.Equal(t, "clear-secret", got)
}

func TestRotationKeepsOldKeysReadable(t *testing.T) {
	old, err := secretbox.Parse("k1:" + key('a'))
	require.NoError(t, err)
	s, err := old.Seal("s3cret")
	require.NoError(t, err)
	both, err := secretbox.Parse("k2:" + key('b') + ", k1:" + key('a'))
	require.NoError(t, err)
	require.Equal(t, "k2", both.Current())
	got, err := both.Open(s)
	require.NoError(t, err)
	require.Equal(t, "s3cret", got)
	s2, err := both.Seal("s3cret")
	require.NoError(t, err)
	require.Equal(t, "k2", secretbox.KeyID(s2))
}

func TestWrongKeyID(t *testing.T) {
	k1, err := secretbox.Parse("k1:" + key('a'))
	require.NoError(t, err)
	s, err := k1.Seal("s3cret")
	require.NoError(t, err)
	k2, err := secretbox.Parse("k2:" + key('b'))
	require.NoError(t, err)
	_, err = k2.Open(s)
	require.ErrorContains(t, err, `key "k1"`)
	// Same id, another key: refused, not garbage.
	other, err := secretbox.Parse("k1:" + key('b'))
	require.NoError(t, err)
	_, err = other.Open(s)
	require.ErrorContains(t, err, "altered")
	// No keys at all.
	var none *secretbox.Keyring
	_, err = none.Open(s)
	require.ErrorIs(t, err, secretbox.ErrNoKey)
}

func TestTamperedRefused(t *testing.T) {
	k, err := secretbox.Parse("k1:" + key('a') + ",k0:" + key('c'))
	require.NoError(t, err)
	s, err := k.Seal("s3cret")
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "v1:k1:"))
	require.NoError(t, err)
	for i := range raw {
		bad := append([]byte(nil), raw...)
		bad[i] ^= 1
		_, err := k.Open("v1:k1:" + base64.StdEncoding.EncodeToString(bad))
		require.Error(t, err, "byte %d flipped", i)
	}
	// The key id is authenticated too: relabelled, it does not open.
	_, err = k.Open(strings.Replace(s, "v1:k1:", "v1:k0:", 1))
	require.Error(t, err)
	for _, bad := range []string{"v1:k1", "v1:k1:!!!", "v1:k1:" + base64.StdEncoding.EncodeToString([]byte("short"))} {
		_, err := k.Open(bad)
		require.Error(t, err, bad)
	}
}

func TestParseErrors(t *testing.T) {
	k, err := secretbox.Parse("  ")
	require.NoError(t, err)
	require.Nil(t, k)
	for _, bad := range []string{"nokey", "k1:" + base64.StdEncoding.EncodeToString([]byte("short")), "bad id:" + key('a'),
		"k1:" + key('a') + ",k1:" + key('b'), "k1:not base64"} {
		_, err := secretbox.Parse(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), key('a'))
	}
}

// TestKeysFromFiles: an entry <id>:file:<path> takes the key from the file
// (its base64 text, a trailing newline allowed), so the configuration need
// not hold it; a missing file or a bad key in it is an error naming the
// entry and the path, never the key.
func TestKeysFromFiles(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/k2"
	require.NoError(t, os.WriteFile(path, []byte(key('b')+"\n"), 0o600))
	k, err := secretbox.ParseKeys([]string{"k2:file:" + path, "k1:" + key('a')}, os.ReadFile)
	require.NoError(t, err)
	require.Equal(t, "k2", k.Current())
	inline, err := secretbox.Parse("k2:" + key('b'))
	require.NoError(t, err)
	s, err := inline.Seal("s3cret")
	require.NoError(t, err)
	got, err := k.Open(s)
	require.NoError(t, err, "the file's key is the same key")
	require.Equal(t, "s3cret", got)
	// The environment variable takes file entries too.
	k, err = secretbox.Parse("k2:file:" + path)
	require.NoError(t, err)
	_, err = k.Open(s)
	require.NoError(t, err)

	short := dir + "/short"
	require.NoError(t, os.WriteFile(short, []byte(base64.StdEncoding.EncodeToString([]byte("short"))), 0o600))
	for entries, want := range map[string]string{
		"k1:" + key('a') + "|k2:file:" + dir + "/missing": `key 2: error reading key "k2" from ` + dir + `/missing: no such file or directory`,
		"k3:file:" + short:                    `key 1: key "k3" is not the standard base64 of 32 bytes (e.g. openssl rand -base64 32)`,
		"k4:file:":                            `key 1: key "k4" names no file (file:<path>)`,
		"k2:file:" + path + "|k2:" + key('a'): `key 2: key id "k2" appears twice`,
	} {
		_, err := secretbox.ParseKeys(strings.Split(entries, "|"), os.ReadFile)
		var entryErr *secretbox.EntryError
		require.ErrorAs(t, err, &entryErr, entries)
		require.EqualError(t, err, want)
		require.NotContains(t, err.Error(), key('a'))
		require.NotContains(t, err.Error(), key('b'))
	}
	none, err := secretbox.ParseKeys(nil, os.ReadFile)
	require.NoError(t, err)
	require.Nil(t, none)
}
