package gcptest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// OIDC signs Google-style OIDC tokens with a local RSA key and serves that
// key as Google's signing keys (the JWKS at
// https://www.googleapis.com/oauth2/v3/certs, which idtoken reads): Client
// sends requests for Google's certificates to it.
type OIDC struct {
	key *rsa.PrivateKey
	kid string
	srv *httptest.Server
}

// NewOIDC makes a key and serves it for the test.
func NewOIDC(t *testing.T) *OIDC {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	o := &OIDC{key: key, kid: "test-key-1"}
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": o.kid,
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	require.NoError(t, err)
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth2/v3/certs" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// Client is an HTTP client whose requests to www.googleapis.com go to the
// local key server: give it to idtoken (option.WithHTTPClient).
func (o *OIDC) Client() *http.Client {
	target, _ := url.Parse(o.srv.URL)
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		if r.URL.Host == "www.googleapis.com" {
			r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Claims are a token's claims; Token fills iss, iat and exp when unset.
type Claims map[string]any

// Token signs claims as Google signs a push's OIDC token (RS256, with the
// local key's id): iss accounts.google.com, valid for an hour from now,
// unless claims say otherwise.
func (o *OIDC) Token(t *testing.T, claims Claims) string {
	t.Helper()
	c := Claims{"iss": "https://accounts.google.com", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(), "email_verified": true}
	for k, v := range claims {
		c[k] = v
	}
	return o.sign(t, o.key, c)
}

// ForeignToken signs claims with a key Google's certificates do not hold.
func (o *OIDC) ForeignToken(t *testing.T, claims Claims) string {
	t.Helper()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	c := Claims{"iss": "https://accounts.google.com", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(), "email_verified": true}
	for k, v := range claims {
		c[k] = v
	}
	return o.sign(t, other, c)
}

func (o *OIDC) sign(t *testing.T, key *rsa.PrivateKey, c Claims) string {
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": o.kid})
	require.NoError(t, err)
	payload, err := json.Marshal(c)
	require.NoError(t, err)
	signed := b64(header) + "." + b64(payload)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	require.NoError(t, err)
	return signed + "." + b64(sig)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
