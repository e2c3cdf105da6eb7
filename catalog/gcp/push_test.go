package gcp_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/gcptest"
)

const audience = "https://wf.example.com/hooks/gcs"

// pushBody is a Pub/Sub push of a Cloud Storage notification.
func pushBody(id, subscription, bucket, object, eventType, generation string) []byte {
	data, _ := json.Marshal(map[string]string{"name": object, "bucket": bucket, "size": "42", "contentType": "application/geo+json", "md5Hash": "abc=="})
	b, _ := json.Marshal(map[string]any{
		"message": map[string]any{
			"attributes": map[string]string{"bucketId": bucket, "objectId": object, "eventType": eventType,
				"objectGeneration": generation, "payloadFormat": "JSON_API_V1", "eventTime": "2026-01-01T00:00:00Z"},
			"data": base64.StdEncoding.EncodeToString(data), "messageId": id, "publishTime": "2026-01-01T00:00:00Z",
		},
		"subscription": subscription,
	})
	return b
}

func (b *bundle) receiver(oidc *gcptest.OIDC) *gcp.PushReceiver {
	b.t.Helper()
	p, err := gcp.NewPushReceiver(b.ctx, gcp.PushConfig{Store: b.store, Audience: audience, ServiceAccount: pushSA, CertsClient: oidc.Client()})
	require.NoError(b.t, err)
	return p
}

// own records bucket as catalog id's, as gcp_provision does.
func (b *bundle) own(id, bucket string) store.GCPResources {
	b.t.Helper()
	rec, err := b.store.SaveGCPResources(b.ctx, store.GCPResources{CatalogID: id, SchemaName: "s_" + id, Project: project, Bucket: bucket,
		Topic: "projects/test-project/topics/t-" + id, Subscription: "projects/test-project/subscriptions/s-" + id})
	require.NoError(b.t, err)
	return rec
}

// events counts the outbox's storage events of a tenant.
func (b *bundle) storageEvents(schema string) int {
	var n int
	require.NoError(b.t, b.store.DB().QueryRow(b.ctx,
		`SELECT count(*) FROM tasks.events WHERE schema_name = $1 AND event_type LIKE 'storage.object.%'`, schema).Scan(&n))
	return n
}

// TestPushVerification refuses every push whose token is not a valid Google
// OIDC token for the audience from the push service account, and writes
// nothing for them.
func TestPushVerification(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.catalog("demo", "roads")
	rec := b.own("demo", "bucket-demo")
	oidc := gcptest.NewOIDC(t)
	p := b.receiver(oidc)
	body := pushBody("m1", rec.Subscription, rec.Bucket, "demo/roads/a.geojson", "OBJECT_FINALIZE", "1")
	good := gcptest.Claims{"aud": audience, "email": pushSA}

	for name, auth := range map[string]string{
		"no token":          "",
		"not bearer":        "Basic " + oidc.Token(t, good),
		"garbage":           "Bearer not.a.jwt",
		"wrong audience":    "Bearer " + oidc.Token(t, gcptest.Claims{"aud": "https://other.example.com", "email": pushSA}),
		"wrong account":     "Bearer " + oidc.Token(t, gcptest.Claims{"aud": audience, "email": "mallory@evil.iam.gserviceaccount.com"}),
		"unverified e-mail": "Bearer " + oidc.Token(t, gcptest.Claims{"aud": audience, "email": pushSA, "email_verified": false}),
		"expired":           "Bearer " + oidc.Token(t, gcptest.Claims{"aud": audience, "email": pushSA, "exp": time.Now().Add(-time.Minute).Unix()}),
		"other issuer":      "Bearer " + oidc.Token(t, gcptest.Claims{"aud": audience, "email": pushSA, "iss": "https://evil.example.com"}),
		"foreign key":       "Bearer " + oidc.ForeignToken(t, good),
	} {
		_, err := p.Receive(b.ctx, auth, body)
		require.ErrorIs(t, err, gcp.ErrPushUnauthorized, name)
	}
	require.Zero(t, b.storageEvents("s_demo"))

	res, err := p.Receive(b.ctx, "Bearer "+oidc.Token(t, good), body)
	require.NoError(t, err)
	require.Equal(t, "stored", res.Status)
	require.Equal(t, 1, b.storageEvents("s_demo"))
}

// TestPushStoresOnce writes one event per message id however many times,
// and however concurrently, Pub/Sub delivers it; pushes about other
// tenants' buckets or through another catalog's subscription touch nothing.
func TestPushStoresOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.catalog("demo", "roads")
	b.catalog("other", "roads")
	rec := b.own("demo", "bucket-demo")
	other := b.own("other", "bucket-other")
	oidc := gcptest.NewOIDC(t)
	p := b.receiver(oidc)
	auth := "Bearer " + oidc.Token(t, gcptest.Claims{"aud": audience, "email": pushSA})

	// 8 deliveries of each of 5 messages, all at once.
	var wg sync.WaitGroup
	results := make(chan string, 40)
	for m := range 5 {
		for range 8 {
			wg.Go(func() {
				res, err := p.Receive(b.ctx, auth, pushBody(fmt.Sprint("msg-", m), rec.Subscription, rec.Bucket,
					fmt.Sprintf("demo/roads/f%d.geojson", m), "OBJECT_FINALIZE", "7"))
				if err != nil {
					results <- err.Error()
					return
				}
				results <- res.Status
			})
		}
	}
	wg.Wait()
	close(results)
	counts := map[string]int{}
	for r := range results {
		counts[r]++
	}
	require.Equal(t, map[string]int{"stored": 5, "duplicate": 35}, counts)
	require.Equal(t, 5, b.storageEvents("s_demo"))

	var payload gcp.StorageEventInputs
	var raw []byte
	require.NoError(t, b.store.DB().QueryRow(b.ctx, `SELECT payload FROM tasks.events WHERE schema_name = 's_demo' AND payload->>'message_id' = 'msg-0'`).Scan(&raw))
	require.NoError(t, json.Unmarshal(raw, &payload))
	require.Equal(t, gcp.StorageEventInputs{CatalogID: "demo", Bucket: "bucket-demo", Object: "demo/roads/f0.geojson", EventType: "OBJECT_FINALIZE",
		Generation: "7", Size: "42", ContentType: "application/geo+json", MD5Hash: "abc==", EventTime: "2026-01-01T00:00:00Z", MessageID: "msg-0"}, payload)

	// Another catalog's bucket through this catalog's subscription: refused.
	_, err := p.Receive(b.ctx, auth, pushBody("x1", rec.Subscription, other.Bucket, "other/roads/a.csv", "OBJECT_FINALIZE", "1"))
	require.ErrorIs(t, err, gcp.ErrPushForbidden)
	require.Zero(t, b.storageEvents("s_other"))
	// A bucket no catalog owns, an event that changes no asset: acknowledged, nothing written.
	res, err := p.Receive(b.ctx, auth, pushBody("x2", rec.Subscription, "nobodys-bucket", "a/b/c.csv", "OBJECT_FINALIZE", "1"))
	require.NoError(t, err)
	require.Equal(t, "ignored", res.Status)
	res, err = p.Receive(b.ctx, auth, pushBody("x3", rec.Subscription, rec.Bucket, "demo/roads/a.csv", "OBJECT_METADATA_UPDATE", "1"))
	require.NoError(t, err)
	require.Equal(t, "ignored", res.Status)
	// Not a push at all.
	for _, bad := range []string{`[]`, `{"message":{}}`, `{"message":{"messageId":"1","attributes":{"bucketId":"b"}},"subscription":"s"}`} {
		_, err = p.Receive(b.ctx, auth, []byte(bad))
		require.ErrorIs(t, err, gcp.ErrBadPush, bad)
	}
	require.Equal(t, 5, b.storageEvents("s_demo"))
}
