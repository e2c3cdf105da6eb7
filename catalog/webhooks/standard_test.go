package webhooks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/clock"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/wftype"
)

// referenceVerify is a Standard Webhooks verifier written from the
// specification (github.com/standard-webhooks/standard-webhooks, spec/
// standard-webhooks.md, "Verifying webhook authenticity"), not from wf's
// code: the secret is "whsec_" + base64(key); the signed content is
// "{webhook-id}.{webhook-timestamp}.{body}"; the signature is the base64 of
// HMAC-SHA256(key, content); webhook-signature is a space-delimited list of
// "{version},{signature}" of which one "v1" must match; the timestamp must be
// within the tolerance of the receiver's clock.
func referenceVerify(secret string, h http.Header, body []byte, now time.Time) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	expected := mac.Sum(nil)
	for _, versioned := range strings.Split(h.Get("webhook-signature"), " ") {
		version, sig, ok := strings.Cut(versioned, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, expected) {
			return true
		}
	}
	return false
}

// The example of the Standard Webhooks documentation (and of the Svix
// libraries that implement it).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = "1614265330"
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestStandardSignature(t *testing.T) {
	t.Parallel()
	key, err := webhooks.StandardKey(vectorSecret)
	require.NoError(t, err)
	require.Equal(t, vectorSignature, webhooks.SignStandard(key, vectorID, vectorTimestamp, []byte(vectorBody)))

	now := time.Unix(1614265330, 0).Add(time.Minute)
	h := http.Header{}
	h.Set("webhook-id", vectorID)
	h.Set("webhook-timestamp", vectorTimestamp)
	h.Set("webhook-signature", "v1,bm90LXRoaXMtb25l "+vectorSignature) // a rotated key's signature first
	require.True(t, referenceVerify(vectorSecret, h, []byte(vectorBody), now))
	require.NoError(t, webhooks.VerifyStandard(vectorSecret, vectorID, vectorTimestamp, h.Get("webhook-signature"), []byte(vectorBody), now, webhooks.DefaultTolerance))
	for name, err := range map[string]error{
		"other body": webhooks.VerifyStandard(vectorSecret, vectorID, vectorTimestamp, vectorSignature, []byte(`{"test": 1}`), now, webhooks.DefaultTolerance),
		"other id":   webhooks.VerifyStandard(vectorSecret, "msg_other", vectorTimestamp, vectorSignature, []byte(vectorBody), now, webhooks.DefaultTolerance),
		"replayed":   webhooks.VerifyStandard(vectorSecret, vectorID, vectorTimestamp, vectorSignature, []byte(vectorBody), now.Add(time.Hour), webhooks.DefaultTolerance),
		"v2 only":    webhooks.VerifyStandard(vectorSecret, vectorID, vectorTimestamp, "v2"+vectorSignature[2:], []byte(vectorBody), now, webhooks.DefaultTolerance),
	} {
		require.ErrorIs(t, err, webhooks.ErrBadSignature, name)
	}

	for secret, msg := range map[string]string{
		"0123456789abcdef0123456789abcdef": "starts with whsec_",
		"whsec_not base64!":                "does not decode",
		"whsec_c2hvcnQ=":                   "24 to 64 bytes; this one is 5",
	} {
		require.ErrorContains(t, webhooks.CheckSecret(webhooks.SchemeStandard, secret), msg)
	}
	require.NoError(t, webhooks.CheckSecret(webhooks.SchemeWF, "0123456789abcdef"))
	require.ErrorContains(t, webhooks.CheckSecret("svix", "x"), "unknown signature scheme")
}

// TestStandardWebhookDelivery: a subscriber that chose Standard Webhooks
// gets a delivery that the reference verifier accepts, with the event id as
// webhook-id (the same on a retry), and none of wf's own signature headers.
func TestStandardWebhookDelivery(t *testing.T) {
	t.Parallel()
	b := startEngine(t)
	var mu sync.Mutex
	var got []http.Header
	var valid int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req.Header.Clone())
		if !referenceVerify(vectorSecret, req.Header, body, clock.Now()) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		valid++
		if valid == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // retried: the same webhook-id again
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	sub, err := b.store.InsertWebhookSubscriber(b.ctx, store.NewWebhookSubscriber{
		URL: srv.URL, Secret: vectorSecret, EventTypes: []string{"catalog.*"}, Signature: webhooks.SchemeStandard})
	require.NoError(t, err)
	require.Equal(t, webhooks.SchemeStandard, sub.Signature)

	res, err := events.NewEmitter(b.store).Emit(b.ctx, events.Event{Type: "catalog.created", Scope: events.ScopeCatalog, SchemaName: "cat_s",
		Payload: json.RawMessage(`{"catalog_id": "s"}`)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.delivery(t, sub.ID).Status == wftype.StatusCompleted }, 30*time.Second, 20*time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, valid)
	require.Len(t, got, 2)
	for _, h := range got {
		require.Equal(t, res.Event.ID.String(), h.Get("webhook-id"))
		require.Empty(t, h.Get(webhooks.HeaderSignature))
		require.Empty(t, h.Get(webhooks.HeaderTimestamp))
		require.Equal(t, "catalog.created", h.Get(webhooks.HeaderEventType))
	}
}

// TestStandardSubscriberWithBadSecret: a standard subscriber whose secret is
// not a Standard Webhooks secret (written around `wf webhooks add`) fails
// its delivery for good, naming the subscriber and not the secret.
func TestStandardSubscriberWithBadSecret(t *testing.T) {
	t.Parallel()
	set := eventSpecs(t)
	st := store.New(dbtest.NewPool(t))
	h, err := webhooks.New(webhooks.Deps{Store: st, Client: client.New(st, set)})
	require.NoError(t, err)
	sub, err := st.InsertWebhookSubscriber(context.Background(), store.NewWebhookSubscriber{
		URL: "http://127.0.0.1:1/", Secret: "plain-secret-of-32-characters-xx", EventTypes: []string{"catalog.*"}, Signature: webhooks.SchemeStandard})
	require.NoError(t, err)
	id, _, err := store.NewID()
	require.NoError(t, err)
	in, _ := json.Marshal(map[string]any{"subscriber_id": sub.ID.String(), "event_id": "e1", "event_type": "catalog.created", "payload": map[string]any{}})
	_, err = h.Deliver(context.Background(), &wftype.Task{ID: id, Inputs: in, Attempts: 1}, nil)
	require.Error(t, err)
	require.True(t, wftype.IsPermanent(err))
	require.Contains(t, err.Error(), sub.ID.String())
	require.NotContains(t, err.Error(), "plain-secret")
}
