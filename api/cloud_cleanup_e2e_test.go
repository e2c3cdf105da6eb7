package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"

	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/gcptest"
)

// TestCloudCleanupAfterDrop checks, through the engine and the shipped
// specs, that a deleted catalog's or collection's cloud half goes only
// after its database half: gcp_catalog_cleanup starts from the
// collection.dropped or catalog.dropped that collection_drop or
// catalog_drop writes in the transaction that drops. A catalog whose drop
// fails keeps its bucket and objects; once the drop succeeds (requeued by
// an admin) the bucket goes. Storage on fake-gcs-server, Pub/Sub on pstest,
// through the real clients.
func TestCloudCleanupAfterDrop(t *testing.T) {
	// Not parallel: the fake storage server publishes its notifications
	// through a Pub/Sub client that finds pstest by PUBSUB_EMULATOR_HOST.
	gcs, ps := gcptest.NewStorage(t), gcptest.NewPubSub(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", ps.Server.Addr)
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.URL)
	settings := config.Default().GCP
	settings.Project, settings.PushEndpoint = "test-project", "https://wf.example.com/hooks/gcs"
	settings.PushServiceAccount = "push@test-project.iam.gserviceaccount.com"
	storageOptions := []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(gcs.Endpoint)}
	b := setup(t, options{gcp: gcp.Deps{Settings: settings, PubSubOptions: ps.Options, StorageOptions: storageOptions}})
	startFeatureEngine(t, b, t.TempDir())
	svc, err := storagev1.NewService(b.ctx, storageOptions...)
	require.NoError(t, err)

	b.createCatalog("cat-a", "regions", "roads")
	var rec store.GCPResources
	require.Eventually(t, func() bool {
		rec, err = b.store.GetGCPResources(b.ctx, "cat-a")
		return err == nil
	}, time.Minute, 50*time.Millisecond, "gcp_provision records the catalog's resources")
	for _, name := range []string{"cat-a/regions/a.geojson", "cat-a/roads/r.geojson"} {
		_, err := svc.Objects.Insert(rec.Bucket, &storagev1.Object{Name: name}).Media(strings.NewReader("{}")).Do()
		require.NoError(t, err)
	}
	objects := func() []string {
		list, err := svc.Objects.List(rec.Bucket).Do()
		if err != nil {
			return nil
		}
		var names []string
		for _, o := range list.Items {
			names = append(names, o.Name)
		}
		return names
	}
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
		}, time.Minute, 50*time.Millisecond, "a gcp_catalog_cleanup task for %q", collection)
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
		}, time.Minute, 50*time.Millisecond, "the %s task completes", dropType)
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
	}, time.Minute, 50*time.Millisecond, "catalog.deleted starts catalog_drop")
	task := b.follow("/tasks/"+dropID, tokAdmin)
	require.Equal(t, "FAILED", task["status"], task)
	require.Contains(t, task["error"], "holds tables wf did not create (not_wf)")
	require.Eventually(t, func() bool {
		var live int
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM tasks.events WHERE status <> 'DEAD_LETTER'`).Scan(&live))
		return live == 0
	}, time.Minute, 50*time.Millisecond, "every event consumed")
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
