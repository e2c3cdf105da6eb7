package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	storagev1 "google.golang.org/api/storage/v1"

	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/livetest"
	"github.com/wfhq/wf/internal/objio"
)

// waitCloud is how long the cloud contracts wait for a notification, a
// task or a resource: a deadline, generous for a real service.
const waitCloud = 5 * time.Minute

// TestStorageUploadEndToEnd is the seed's "upload a file to the bucket →
// an asset appears → it is ingested", run locally: registering a catalog
// provisions its bucket, topic, notification and push subscription
// (gcp_provision, on fake-gcs-server and pstest); a file uploaded to the
// bucket through the Cloud Storage client makes the fake publish its
// notification to the topic; a relay pushes it to POST /hooks/gcs with an
// OIDC token signed by a local key, as Pub/Sub push does; the event becomes
// the collection's asset (gcs_storage_event), whose asset.created starts an
// ingestion that reads the object from the bucket and COMPLETES. A second
// catalog's pushes never reach the first. One contract, two backends: the
// fakes (make test) and a real project (make test-live, docs/live-tests.md),
// where the bucket, notification, topic and Pub/Sub delivery are Google's
// and only the last hop, Pub/Sub's push to wf, is the relay's.
func TestStorageUploadEndToEnd(t *testing.T) {
	// Not parallel (fakeCloud sets the environment).
	livetest.Backends(t, fakeCloud, liveCloud("cat-a", "cat-b"), storageUploadContract)
}

func storageUploadContract(t *testing.T, c cloudBackend) {
	deps, ps := c.deps, c.pubsub
	oidc := gcptest.NewOIDC(t)
	const sa, aud = pushServiceAccount, pushEndpoint
	b := setup(t, options{
		gcp: deps,
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
	}, waitCloud, 50*time.Millisecond, "gcp_provision records the catalog's resources")
	require.Equal(t, c.bucket("cat-a"), rec.Bucket)
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
	}, waitCloud, 100*time.Millisecond, "the upload's notification makes the asset")
	asset := b.do("GET", "/catalogs/cat-a/assets/"+assetID, tokClientLimited, nil).json(t)
	require.Equal(t, "gs://"+rec.Bucket+"/cat-a/regions/admin_regions.geojson", asset["uri"])
	require.Equal(t, "vector", asset["kind"])
	var taskID string
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(b.ctx, `SELECT task_id::text FROM tasks.tasks
			WHERE task_type = 'ingestion' AND schema_name = 's_cat_a' AND inputs->>'asset_id' = $1`, assetID).Scan(&taskID)
		return err == nil
	}, waitCloud, 100*time.Millisecond, "asset.created starts an ingestion")
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
	require.NoError(t, c.storage.Objects.Delete(rec.Bucket, "cat-a/regions/admin_regions.geojson").Do())
	require.Eventually(t, func() bool {
		res := b.do("GET", "/catalogs/cat-a/assets/"+assetID, tokClientLimited, nil)
		return res.status == http.StatusOK && res.json(t)["status"] == "deleted"
	}, waitCloud, 100*time.Millisecond, "the delete notification marks the asset deleted")

	// Tenancy: another catalog's push, even with a valid token, cannot
	// reach cat-a through cat-a's bucket.
	b.createCatalog("cat-b", "regions")
	require.Eventually(t, func() bool {
		_, err := b.store.GetGCPResources(b.ctx, "cat-b")
		return err == nil
	}, waitCloud, 50*time.Millisecond)
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

// TestCloudCleanupAfterDrop checks, through the engine and the shipped
// specs, that a deleted catalog's or collection's cloud half goes only
// after its database half: gcp_catalog_cleanup starts from the
// collection.dropped or catalog.dropped that collection_drop or
// catalog_drop writes in the transaction that drops. A catalog whose drop
// fails keeps its bucket and objects; once the drop succeeds (requeued by
// an admin) the bucket goes. Through the real clients, on the fakes
// (fake-gcs-server, pstest) and, under make test-live, on a real project.
func TestCloudCleanupAfterDrop(t *testing.T) {
	// Not parallel (fakeCloud sets the environment).
	livetest.Backends(t, fakeCloud, liveCloud("cat-a"), cloudCleanupContract)
}

func cloudCleanupContract(t *testing.T, c cloudBackend) {
	b := setup(t, options{gcp: c.deps})
	startFeatureEngine(t, b, t.TempDir())
	svc := c.storage
	var err error

	b.createCatalog("cat-a", "regions", "roads")
	var rec store.GCPResources
	require.Eventually(t, func() bool {
		rec, err = b.store.GetGCPResources(b.ctx, "cat-a")
		return err == nil
	}, waitCloud, 50*time.Millisecond, "gcp_provision records the catalog's resources")
	for _, name := range []string{"cat-a/regions/a.geojson", "cat-a/roads/r.geojson"} {
		_, err := svc.Objects.Insert(rec.Bucket, &storagev1.Object{Name: name}).Media(strings.NewReader("{}")).Do()
		require.NoError(t, err)
	}
	objects := func() []string { return c.objects(t, rec.Bucket) }
	// cleanup waits for the gcp_catalog_cleanup task of a collection ("" for
	// the catalog's) to end, checks that it follows the drop task of the same
	// deletion, and returns its outputs. The drop emits <kind>.dropped in the
	// transaction that drops (the cleanup may start before the drop task's
	// own COMPLETED is recorded): the drop, now COMPLETED, must have emitted
	// that event, and the cleanup must be younger than the drop's start.
	cleanup := func(dropType, collection string) map[string]any {
		t.Helper()
		var id string
		require.Eventually(t, func() bool {
			return b.pool.QueryRow(b.ctx, `SELECT task_id::text FROM tasks.tasks WHERE task_type = 'gcp_catalog_cleanup'
				AND inputs->>'catalog_id' = 'cat-a' AND coalesce(inputs->>'collection_id', '') = $1`, collection).Scan(&id) == nil
		}, waitCloud, 50*time.Millisecond, "a gcp_catalog_cleanup task for %q", collection)
		task := b.follow("/tasks/"+id, tokAdmin)
		require.Equal(t, "COMPLETED", task["status"], task)
		var after bool
		dropped := strings.TrimSuffix(dropType, "_drop") + ".dropped"
		require.Eventually(t, func() bool {
			return b.pool.QueryRow(b.ctx, `SELECT c.timestamp >= date_trunc('milliseconds', d.started_at)
				   AND d.emitted_events @> jsonb_build_array(jsonb_build_object('event_type', $4::text))
				FROM tasks.tasks c, tasks.tasks d
				WHERE c.task_id = $1 AND d.task_type = $2 AND d.status = 'COMPLETED' AND d.inputs->>'catalog_id' = 'cat-a'
				  AND ($2 = 'catalog_drop' OR d.inputs->>'collection_id' = $3)`, id, dropType, collection, dropped).Scan(&after) == nil
		}, waitCloud, 50*time.Millisecond, "the %s task completes", dropType)
		require.True(t, after, "the cleanup follows the drop, which emitted %s", dropped)
		return task["outputs"].(map[string]any)
	}

	// A deleted collection: its table goes, then its objects.
	res := b.do("DELETE", "/catalogs/cat-a/collections/roads", tokAdmin, nil)
	require.Equal(t, http.StatusNoContent, res.status, string(res.body))
	out := cleanup("collection_drop", "roads")
	require.Equal(t, 1.0, out["objects_deleted"], out)
	require.Equal(t, []string{"cat-a/regions/a.geojson"}, objects())

	// A catalog whose drop fails (its schema holds a table wf did not
	// create) keeps its bucket: no cleanup is created.
	_, err = b.pool.Exec(b.ctx, `CREATE TABLE s_cat_a.not_wf (x int)`)
	require.NoError(t, err)
	res = b.do("DELETE", "/catalogs/cat-a", tokAdmin, nil)
	require.Equal(t, http.StatusNoContent, res.status, string(res.body))
	var dropID string
	require.Eventually(t, func() bool {
		return b.pool.QueryRow(b.ctx, `SELECT task_id::text FROM tasks.tasks WHERE task_type = 'catalog_drop'`).Scan(&dropID) == nil
	}, waitCloud, 50*time.Millisecond, "catalog.deleted starts catalog_drop")
	task := b.follow("/tasks/"+dropID, tokAdmin)
	require.Equal(t, "FAILED", task["status"], task)
	require.Contains(t, task["error"], "holds tables wf did not create (not_wf)")
	require.Eventually(t, func() bool {
		var live int
		// None PROCESSING or due (an unmatched one is held back, PENDING,
		// until it is events.unmatched_grace old).
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.events
WHERE status = 'PROCESSING' OR (status = 'PENDING' AND run_after <= now())`).Scan(&live))
		return live == 0
	}, waitCloud, 50*time.Millisecond, "every event consumed")
	var cleanups int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.tasks WHERE task_type = 'gcp_catalog_cleanup'
		AND inputs->>'collection_id' IS NULL`).Scan(&cleanups))
	require.Zero(t, cleanups, "no cleanup after a failed drop")
	_, err = svc.Buckets.Get(rec.Bucket).Do()
	require.NoError(t, err, "the bucket stays")
	require.Equal(t, []string{"cat-a/regions/a.geojson"}, objects())

	// The table moved away and the drop requeued, the drop succeeds and
	// then the bucket, its notifications, subscription and topic go.
	_, err = b.pool.Exec(b.ctx, `ALTER TABLE s_cat_a.not_wf SET SCHEMA public`)
	require.NoError(t, err)
	res = b.do("POST", "/admin/tasks/"+dropID+"/requeue", tokAdmin, nil)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	task = b.follow("/tasks/"+dropID, tokAdmin)
	require.Equal(t, "COMPLETED", task["status"], task)
	out = cleanup("catalog_drop", "")
	require.Equal(t, "removed", out["outcome"], out)
	require.Equal(t, true, out["bucket_deleted"], out)
	require.Equal(t, true, out["topic_deleted"], out)
	require.Equal(t, true, out["subscription_deleted"], out)
	require.Equal(t, 1.0, out["objects_deleted"], out)
	_, err = svc.Buckets.Get(rec.Bucket).Do()
	require.Error(t, err, "the bucket is gone")
}
