package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of every delivery.
const (
	// HeaderTimestamp carries the delivery time, in Unix seconds.
	HeaderTimestamp = "X-WF-Timestamp"
	// HeaderSignature carries "sha256=" and the hex HMAC-SHA256, keyed with
	// the subscriber's secret, of "<timestamp>.<body>".
	HeaderSignature = "X-WF-Signature"
	// HeaderEventID is the event's id: the same for every retry of a
	// delivery, so receivers deduplicate on it.
	HeaderEventID = "X-WF-Event-ID"
	// HeaderEventType is the event's type, e.g. catalog.deleted.
	HeaderEventType = "X-WF-Event-Type"
	// HeaderDeliveryID is the id of the webhook_delivery task.
	HeaderDeliveryID = "X-WF-Delivery-ID"
	// signaturePrefix names the algorithm in HeaderSignature.
	signaturePrefix = "sha256="
)

// DefaultTolerance is how far a receiver should let a delivery's timestamp
// be from its own clock.
const DefaultTolerance = 5 * time.Minute

// Sign returns the HeaderSignature value of a delivery: "sha256=" and the
// hex HMAC-SHA256 of "<timestamp>.<body>" keyed with secret.
func Sign(secret []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// ErrBadSignature is returned by Verify for a delivery that was not signed
// with the secret, or that is too old or too new.
var ErrBadSignature = errors.New("bad webhook signature")

// Verify is the receiver's check of a delivery (a Go receiver may call it):
// timestamp and signature are the HeaderTimestamp and HeaderSignature
// values, body the raw request body, now the receiver's clock. It rejects a
// timestamp more than tolerance away from now (a replayed delivery) and a
// signature that does not match, comparing in constant time.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	if err := checkTimestamp(timestamp, now, tolerance); err != nil {
		return err
	}
	if !strings.HasPrefix(signature, signaturePrefix) {
		return fmt.Errorf("%w: expected %q followed by a hex HMAC-SHA256", ErrBadSignature, signaturePrefix)
	}
	if !hmac.Equal([]byte(signature), []byte(Sign(secret, timestamp, body))) {
		return fmt.Errorf("%w: the HMAC does not match", ErrBadSignature)
	}
	return nil
}

// checkTimestamp rejects a delivery time (Unix seconds) more than
// tolerance away from now: a replayed delivery.
func checkTimestamp(timestamp string, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q is not Unix seconds", ErrBadSignature, timestamp)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp is %s away from now, more than %s", ErrBadSignature, d.Round(time.Second), tolerance)
	}
	return nil
}

// Fingerprint identifies a secret without revealing it: the first 12 hex
// digits of its SHA-256, for `wf webhooks list`.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}
