package config

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// Role is what a bearer token may do in the HTTP API.
type Role string

// The roles of a token.
const (
	// RoleClient submits work and reads its own tasks (optionally limited
	// to some catalogs).
	RoleClient Role = "client"
	// RoleWorker reports progress and outcomes of tasks it runs remotely.
	RoleWorker Role = "worker"
	// RoleAdmin may do everything, including requeueing and cancelling.
	RoleAdmin Role = "admin"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleClient || r == RoleWorker || r == RoleAdmin }

// Token is one bearer token of the HTTP API. In a file or WF_TOKENS it
// gives either the plain Token or its TokenSHA256; Load hashes a plain
// token and drops it, so a loaded Config never holds one.
type Token struct {
	// Name says who holds the token; it appears in logs, never the token.
	Name string `yaml:"name" json:"name"`
	// Role is what the token may do.
	Role Role `yaml:"role" json:"role"`
	// Catalogs limit a client or worker token to these catalogs; empty
	// means all.
	Catalogs []string `yaml:"catalogs,omitempty" json:"catalogs,omitempty"`
	// TaskTypes limit a worker token to the tasks of these types: it may
	// report on no others. Empty means all.
	TaskTypes []string `yaml:"task_types,omitempty" json:"task_types,omitempty"`
	// Token is the plain token, as configured. Empty after Load.
	Token string `yaml:"token,omitempty" json:"token,omitempty"`
	// TokenSHA256 is the lower-case hex SHA-256 of the token.
	TokenSHA256 string `yaml:"token_sha256,omitempty" json:"token_sha256,omitempty"`
}

// HashToken returns the lower-case hex SHA-256 of a plain token, the form
// TokenSHA256 takes.
func HashToken(plain string) string {
	sum := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(sum[:])
}

// Matches reports whether presented is this token, comparing hashes in
// constant time. An empty presented token never matches.
func (t Token) Matches(presented string) bool {
	if presented == "" {
		return false
	}
	want, err := hex.DecodeString(t.TokenSHA256)
	if err != nil || len(want) != sha256.Size {
		return false
	}
	got := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(got[:], want) == 1
}

// hashTokens replaces every plain token by its hash and normalises hashes
// to lower case.
func (c *Config) hashTokens() {
	for i := range c.Tokens {
		t := &c.Tokens[i]
		if t.Token != "" {
			t.TokenSHA256 = HashToken(t.Token)
			t.Token = ""
		}
		t.TokenSHA256 = strings.ToLower(t.TokenSHA256)
	}
}
