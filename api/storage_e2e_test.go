package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"

	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/objio"
)

// TestStorageUploadEndToEnd is the seed's "upload a file to the bucket →
// an asset appears → it is ingested", run locally: registering a catalog
// provisions its bucket, topic, notification and push subscription
// (gcp_provision, on fake-gcs-server and pstest); a file uploaded to the
// bucket through the Cloud Storage client makes the fake publish its
// notification to the topic; a relay pushes it to POST /hooks/gcs with an
// OIDC token signed by a local key, as Pub/Sub push does; the event becomes
// the collection's asset (gcs_storage_event), whose asset.created starts an
// ingestion that reads the object from the bucket and COMPLETES. A second
// catalog's pushes never reach the first.
func TestStorageUploadEndToEnd(t *testing.T) {
	// The fake storage server publishes its notifications through a Pub/Sub
	// client of its own, which finds pstest by PUBSUB_EMULATOR_HOST; the
	// ingestion reads gs:// objects from STORAGE_EMULATOR_HOST.
	gcs, ps, oidc := gcptest.NewStorage(t), gcptest.NewPubSub(t), gcptest.NewOIDC(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", ps.Server.Addr)
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.URL)
	const sa = "push@test-project.iam.gserviceaccount.com"
	const aud = "https://wf.example.com/hooks/gcs"
	settings := config.Default().GCP
	settings.Project, settings.PushEndpoint, settings.PushServiceAccount = "test-project", aud, sa
	b := setup(t, options{
		gcp: gcp.Deps{Settings: settings, PubSubOptions: ps.Options,
			StorageOptions: []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(gcs.Endpoint)}},
		storagePush: func(st *store.Store) *gcp.PushReceiver {
			p, err := gcp.NewPushReceiver(context.Background(), gcp.PushConfig{Store: st, Audience: aud, ServiceAccount: sa, CertsClient: oidc.Client()})
			require.NoError(t, err)
			return p
		},
	})
	startFeatureEngine(t, b, t.TempDir())

	// Registering the catalog provisions its cloud resources. The
	// collection's layer_config names the attribute holding each record's id.
	b.createCatalog("cat-a")
	cr := b.do("POST", "/catalogs/cat-a/collections", tokAdmin, map[string]any{
		"collection_id": "regions", "layer_config": map[string]any{"id_attribute": "code"},
	})
	require.Equal(t, http.StatusCreated, cr.status, string(cr.body))
	var rec store.GCPResources
	require.Eventually(t, func() bool {
		var err error
		rec, err = b.store.GetGCPResources(b.ctx, "cat-a")
		return err == nil
	}, time.Minute, 50*time.Millisecond, "gcp_provision records the catalog's resources")
	require.Equal(t, "wf-test-project-cat-a", rec.Bucket)
	token := func() string { return oidc.Token(t, gcptest.Claims{"aud": aud, "email": sa}) }
	ps.Relay(t, rec.Topic, rec.Subscription, b.http.URL+"/hooks/gcs", token)

	// Upload, through the real client, to {catalog}/{collection}/{file}.
	fixture, err := os.ReadFile("../catalog/ingest/testdata/admin_regions.geojson")
	require.NoError(t, err)
	w, err := objio.New(objio.Config{}).Create(b.ctx, "gs://"+rec.Bucket+"/cat-a/regions/admin_regions.geojson", "application/geo+json")
	require.NoError(t, err)
	_, err = w.Write(fixture)
	require.NoError(t, err)
	require.NoError(t, w.Close())

	// The asset appears, and its ingestion completes.
	const assetID = "regions.admin_regions.geojson"
	require.Eventually(t, func() bool {
		res := b.do("GET", "/catalogs/cat-a/assets/"+assetID, tokClientLimited, nil)
		return res.status == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "the upload's notification makes the asset")
	asset := b.do("GET", "/catalogs/cat-a/assets/"+assetID, tokClientLimited, nil).json(t)
	require.Equal(t, "gs://wf-test-project-cat-a/cat-a/regions/admin_regions.geojson", asset["uri"])
	require.Equal(t, "vector", asset["kind"])
	var taskID string
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(b.ctx, `SELECT task_id::text FROM tasks.tasks
			WHERE task_type = 'ingestion' AND schema_name = 's_cat_a' AND inputs->>'asset_id' = $1`, assetID).Scan(&taskID)
		return err == nil
	}, time.Minute, 100*time.Millisecond, "asset.created starts an ingestion")
	task := b.follow("/tasks/"+taskID, tokClientLimited)
	require.Equal(t, "COMPLETED", task["status"], task)
	features := task["outputs"].(map[string]any)["features"].(map[string]any)
	require.Equal(t, 6.0, features["created"], task)
	var rows int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM s_cat_a.regions`).Scan(&rows))
	require.Equal(t, 6, rows)

	// The ingestion's own record of its source starts nothing more: one
	// ingestion for one upload.
	var ingestions int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'ingestion'`).Scan(&ingestions))
	require.Equal(t, 1, ingestions)

	// Deleting the object marks the asset deleted.
	svc, err := storagev1.NewService(b.ctx, option.WithoutAuthentication(), option.WithEndpoint(gcs.Endpoint))
	require.NoError(t, err)
	require.NoError(t, svc.Objects.Delete(rec.Bucket, "cat-a/regions/admin_regions.geojson").Do())
	require.Eventually(t, func() bool {
		res := b.do("GET", "/catalogs/cat-a/assets/"+assetID, tokClientLimited, nil)
		return res.status == http.StatusOK && res.json(t)["status"] == "deleted"
	}, time.Minute, 100*time.Millisecond, "the delete notification marks the asset deleted")

	// Tenancy: another catalog's push, even with a valid token, cannot
	// reach cat-a through cat-a's bucket.
	b.createCatalog("cat-b", "regions")
	require.Eventually(t, func() bool {
		_, err := b.store.GetGCPResources(b.ctx, "cat-b")
		return err == nil
	}, time.Minute, 50*time.Millisecond)
	recB, err := b.store.GetGCPResources(b.ctx, "cat-b")
	require.NoError(t, err)
	res := b.push("Bearer "+token(), pushJSON("forged-1", recB.Subscription, rec.Bucket, "cat-a/regions/evil.geojson"))
	require.Equal(t, http.StatusForbidden, res.status, string(res.body))
	res = b.push("", pushJSON("forged-2", rec.Subscription, rec.Bucket, "cat-a/regions/evil.geojson"))
	require.Equal(t, http.StatusUnauthorized, res.status, string(res.body))
	res = b.push("Bearer "+tokAdmin, pushJSON("forged-3", rec.Subscription, rec.Bucket, "cat-a/regions/evil.geojson"))
	require.Equal(t, http.StatusUnauthorized, res.status, "a wf token is no push token: %s", res.body)
	require.Equal(t, http.StatusNotFound, b.do("GET", "/catalogs/cat-a/assets/regions.evil.geojson", tokClientLimited, nil).status)
}

// push POSTs a push body to /hooks/gcs with an Authorization header.
func (b *bundle) push(authorization string, body []byte) response {
	b.t.Helper()
	h := http.Header{}
	if authorization != "" {
		h.Set("Authorization", authorization)
	}
	return b.doHeaders("POST", "/hooks/gcs", "", body, h)
}

// pushJSON is a Pub/Sub push of an object's finalize notification.
func pushJSON(id, subscription, bucket, object string) []byte {
	b, _ := json.Marshal(map[string]any{
		"message": map[string]any{
			"attributes": map[string]string{"bucketId": bucket, "objectId": object, "eventType": "OBJECT_FINALIZE",
				"objectGeneration": "1", "payloadFormat": "JSON_API_V1"},
			"data": "", "messageId": id,
		},
		"subscription": subscription,
	})
	return b
}
