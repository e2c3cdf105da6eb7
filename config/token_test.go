package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokenMatches(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "tokens:\n  - {name: hashed, role: admin, token_sha256: "+strings.ToUpper(HashToken("admin-token-0123456"))+"}\n")
	c, err := Load(Options{File: path, LookupEnv: envOf(map[string]string{})})
	require.NoError(t, err)
	require.True(t, c.Tokens[0].Matches("admin-token-0123456"))
	require.False(t, c.Tokens[0].Matches("admin-token-0123457"))
	require.False(t, c.Tokens[0].Matches(""))

	c, err = Load(Options{WorkDir: t.TempDir(), LookupEnv: envOf(map[string]string{
		"WF_TOKENS": `[{"name":"plain","role":"worker","token":"worker-token-0123456"}]`,
	})})
	require.NoError(t, err)
	tok := c.Tokens[0]
	require.Empty(t, tok.Token, "the plain token is dropped at load")
	require.Equal(t, HashToken("worker-token-0123456"), tok.TokenSHA256)
	require.True(t, tok.Matches("worker-token-0123456"))
	require.False(t, tok.Matches("worker-token-012345"))
	require.False(t, tok.Matches(tok.TokenSHA256), "the hash itself is not the token")

	require.False(t, Token{TokenSHA256: "not hex"}.Matches("x"))
	require.False(t, Token{}.Matches(""))
}

func TestRoleValid(t *testing.T) {
	t.Parallel()
	for _, r := range []Role{RoleClient, RoleWorker, RoleAdmin} {
		require.True(t, r.Valid())
	}
	require.False(t, Role("root").Valid())
	require.False(t, Role("").Valid())
}
