package secretbox_test

import (
	"encoding/base64"
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
