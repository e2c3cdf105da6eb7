// Package secretbox encrypts the secrets wf must keep readable (webhook
// signing secrets) before they reach the database: AES-256-GCM under a key
// named by an id, stored as the text "v1:<key id>:<base64 of nonce and
// ciphertext>". The id travels with each ciphertext, so keys rotate: the
// first key of a Keyring seals, every key of it opens. Text without the
// "v1:" prefix is a secret stored before encryption and reads as itself.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// EnvKey names the environment variable holding the keys: one or more
// entries (see ParseKeys) separated by commas, the current key first, older
// ones after it for reading what they sealed. The configuration's
// secrets.keys holds the same entries as a list (and reads this variable
// too).
const EnvKey = "WF_SECRET_KEY"

// prefix starts every sealed secret; the version is part of the format.
const prefix = "v1:"

// ErrNoKey is returned when a sealed secret is read without keys.
var ErrNoKey = errors.New("a secret in the database is encrypted but no key is configured: set " + EnvKey + " or secrets.keys")

var keyID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Keyring holds the keys: the current one seals, all of them open. A nil
// *Keyring is valid: it seals nothing (secrets stay clear) and opens only
// clear secrets.
type Keyring struct {
	current string
	keys    map[string]cipher.AEAD
}

// Parse reads keys in the EnvKey format (entries separated by commas, see
// ParseKeys). Empty text gives a nil Keyring.
func Parse(text string) (*Keyring, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	k, err := ParseKeys(strings.Split(text, ","), os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", EnvKey, err)
	}
	return k, nil
}

// filePrefix starts the part of a key entry that names a file holding the
// key rather than the key itself.
const filePrefix = "file:"

// EntryError is a key entry that could not be read: Index counts from 0,
// so the configuration can point at secrets.keys[Index]. It never quotes
// a key.
type EntryError struct {
	Index int
	Err   error
}

func (e *EntryError) Error() string { return fmt.Sprintf("key %d: %v", e.Index+1, e.Err) }

func (e *EntryError) Unwrap() error { return e.Err }

// ParseKeys reads key entries, the current key first: each is
// "<id>:<base64 of 32 bytes>", or "<id>:file:<path>" for a key kept in a
// file (its base64 text, as openssl rand -base64 32 writes it), which
// readFile (os.ReadFile) reads now, so the key itself need not appear in
// the configuration. No entries give a nil Keyring. An error is an
// *EntryError naming the entry.
func ParseKeys(entries []string, readFile func(string) ([]byte, error)) (*Keyring, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	for i, entry := range entries {
		id, aead, err := parseEntry(strings.TrimSpace(entry), readFile)
		if err == nil {
			if _, dup := k.keys[id]; dup {
				err = fmt.Errorf("key id %q appears twice", id)
			}
		}
		if err != nil {
			return nil, &EntryError{Index: i, Err: err}
		}
		k.keys[id] = aead
		if i == 0 {
			k.current = id
		}
	}
	return k, nil
}

// parseEntry reads one key entry (see ParseKeys).
func parseEntry(entry string, readFile func(string) ([]byte, error)) (string, cipher.AEAD, error) {
	id, enc, ok := strings.Cut(entry, ":")
	if !ok || !keyID.MatchString(id) {
		return "", nil, errors.New("not <id>:<base64 key> or <id>:file:<path>, with an id of letters, digits, - or _ (at most 32)")
	}
	if path, isFile := strings.CutPrefix(enc, filePrefix); isFile {
		if path == "" {
			return "", nil, fmt.Errorf("key %q names no file (file:<path>)", id)
		}
		b, err := readFile(path)
		if err != nil {
			// The path is the operator's own configuration, not a secret.
			var pathErr *fs.PathError
			if errors.As(err, &pathErr) {
				err = pathErr.Err
			}
			return "", nil, fmt.Errorf("error reading key %q from %s: %w", id, path, err)
		}
		enc = strings.TrimSpace(string(b))
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) != 32 {
		return "", nil, fmt.Errorf("key %q is not the standard base64 of 32 bytes (e.g. openssl rand -base64 32)", id)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return "", nil, fmt.Errorf("key %q: %w", id, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return "", nil, fmt.Errorf("key %q: %w", id, err)
	}
	return id, aead, nil
}

// Current is the id of the key that seals, "" for a nil Keyring.
func (k *Keyring) Current() string {
	if k == nil {
		return ""
	}
	return k.current
}

// IsSealed reports whether stored is a sealed secret.
func IsSealed(stored string) bool { return strings.HasPrefix(stored, prefix) }

// KeyID is the id of the key that sealed stored, "" for a clear secret.
func KeyID(stored string) string {
	rest, ok := strings.CutPrefix(stored, prefix)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, ":")
	return id
}

// Seal encrypts secret under the current key. A nil Keyring returns it
// unchanged (no key configured: secrets are stored clear).
func (k *Keyring) Seal(secret string) (string, error) {
	if k == nil {
		return secret, nil
	}
	aead := k.keys[k.current]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(secret)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("error encrypting a secret: %w", err)
	}
	// The header is authenticated: a ciphertext moved under another id
	// does not open.
	header := prefix + k.current + ":"
	sealed := aead.Seal(nonce, nonce, []byte(secret), []byte(header))
	return header + base64.StdEncoding.EncodeToString(sealed), nil
}

// Open returns the secret stored holds: itself when clear, decrypted when
// sealed. A sealed secret under an unknown key id, or whose text was
// altered, is an error that never quotes it.
func (k *Keyring) Open(stored string) (string, error) {
	rest, ok := strings.CutPrefix(stored, prefix)
	if !ok {
		return stored, nil
	}
	if k == nil {
		return "", ErrNoKey
	}
	id, enc, ok := strings.Cut(rest, ":")
	if !ok {
		return "", errors.New("error decrypting a secret: the stored text is not v1:<key id>:<ciphertext>")
	}
	aead, ok := k.keys[id]
	if !ok {
		return "", fmt.Errorf("error decrypting a secret: it was encrypted with key %q, which the configured keys (%s or secrets.keys) do not list", id, EnvKey)
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return "", fmt.Errorf("error decrypting a secret sealed with key %q: the ciphertext is damaged", id)
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, raw[:n], raw[n:], []byte(prefix+id+":"))
	if err != nil {
		return "", fmt.Errorf("error decrypting a secret sealed with key %q: it was altered or the key is not the one that sealed it", id)
	}
	return string(plain), nil
}
