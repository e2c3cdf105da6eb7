package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Signature schemes a subscriber may choose.
const (
	// SchemeWF is wf's own: HeaderTimestamp and HeaderSignature.
	SchemeWF = "wf"
	// SchemeStandard is Standard Webhooks (standardwebhooks.com):
	// HeaderWebhookID, HeaderWebhookTimestamp and HeaderWebhookSignature,
	// which the receivers' libraries in many languages verify.
	SchemeStandard = "standard"
)

// Schemes are the signature schemes, the default first.
var Schemes = []string{SchemeWF, SchemeStandard}

// Standard Webhooks headers.
const (
	// HeaderWebhookID is the message id: the event's id, the same for every
	// retry, so receivers deduplicate on it.
	HeaderWebhookID = "webhook-id"
	// HeaderWebhookTimestamp is the delivery time in Unix seconds.
	HeaderWebhookTimestamp = "webhook-timestamp"
	// HeaderWebhookSignature is "v1," and the base64 HMAC-SHA256 of
	// "<id>.<timestamp>.<body>" keyed with the secret's decoded bytes.
	HeaderWebhookSignature = "webhook-signature"
	// StandardSecretPrefix starts a Standard Webhooks secret; the base64 of
	// the key follows.
	StandardSecretPrefix = "whsec_"
)

// Bounds of a Standard Webhooks key, in bytes, as the specification
// recommends.
const (
	minStandardKey = 24
	maxStandardKey = 64
)

// StandardKey decodes a Standard Webhooks secret, whsec_ followed by the
// base64 of 24 to 64 bytes, into the HMAC key; the error says what is
// expected without quoting the secret.
func StandardKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, StandardSecretPrefix)
	if !ok {
		return nil, fmt.Errorf("a Standard Webhooks secret starts with %s (e.g. printf 'whsec_%%s' \"$(openssl rand -base64 32)\")", StandardSecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("a Standard Webhooks secret is %s followed by standard base64; this one does not decode", StandardSecretPrefix)
	}
	if len(key) < minStandardKey || len(key) > maxStandardKey {
		return nil, fmt.Errorf("a Standard Webhooks key is %d to %d bytes; this one is %d", minStandardKey, maxStandardKey, len(key))
	}
	return key, nil
}

// CheckSecret reports whether secret suits scheme.
func CheckSecret(scheme, secret string) error {
	switch scheme {
	case "", SchemeWF:
		return nil
	case SchemeStandard:
		_, err := StandardKey(secret)
		return err
	}
	return fmt.Errorf("unknown signature scheme %q; expected one of %s", scheme, strings.Join(Schemes, ", "))
}

// SignStandard returns the HeaderWebhookSignature value of a delivery:
// "v1," and the base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" keyed with
// key (StandardKey of the secret).
func SignStandard(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyStandard is a receiver's check of a Standard Webhooks delivery: id,
// timestamp and signatures are the three headers' values (signatures may
// list several, space-separated, during a key rotation), body the raw
// body, now the receiver's clock.
func VerifyStandard(secret, id, timestamp, signatures string, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := StandardKey(secret)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	if err := checkTimestamp(timestamp, now, tolerance); err != nil {
		return err
	}
	want := []byte(SignStandard(key, id, timestamp, body))
	for _, sig := range strings.Fields(signatures) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return errors.Join(ErrBadSignature, errors.New("no v1 signature matches"))
}
