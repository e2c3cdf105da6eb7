package gcp_test

import (
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func (b *bundle) put(bucket, name string) {
	b.gcs.Fake.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name}, Content: []byte("x")})
}

// TestCleanup removes a deleted collection's objects, then a deleted
// catalog's resources, counting them; a second run finds nothing.
func TestCleanup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.catalog("demo", "roads", "rivers")
	b.mustRun(b.h.Provision, "s_demo", `{"catalog_id":"demo","schema_name":"s_demo"}`)
	bucket := "wf-test-project-demo"
	for _, o := range []string{"demo/roads/a.geojson", "demo/roads/2024/b.csv", "demo/rivers/c.geojson", "demo/roadsides/d.csv"} {
		b.put(bucket, o)
	}

	// A collection that still exists is not touched.
	out := b.mustRun(b.h.Cleanup, "system", `{"catalog_id":"demo","collection_id":"roads","schema_name":"s_demo"}`)
	require.Equal(t, "skipped", out["outcome"])
	require.Len(t, b.gcs.ObjectNames(bucket), 4)

	_, err := b.catalogs.RemoveCollection(b.ctx, "demo", "roads")
	require.NoError(t, err)
	out = b.mustRun(b.h.Cleanup, "system", `{"catalog_id":"demo","collection_id":"roads","schema_name":"s_demo"}`)
	require.Equal(t, "removed", out["outcome"])
	require.EqualValues(t, 2, out["objects_deleted"])
	require.ElementsMatch(t, []string{"demo/rivers/c.geojson", "demo/roadsides/d.csv"}, b.gcs.ObjectNames(bucket))
	out = b.mustRun(b.h.Cleanup, "system", `{"catalog_id":"demo","collection_id":"roads","schema_name":"s_demo"}`)
	require.EqualValues(t, 0, out["objects_deleted"], "idempotent")

	// The catalog: not while it exists.
	out = b.mustRun(b.h.Cleanup, "system", `{"catalog_id":"demo","schema_name":"s_demo"}`)
	require.Equal(t, "skipped", out["outcome"])
	_, err = b.catalogs.Delete(b.ctx, "demo")
	require.NoError(t, err)
	// A first attempt that got as far as the subscription: the retry finishes.
	require.NoError(t, b.ps.Client.SubscriptionAdminClient.DeleteSubscription(b.ctx,
		&pubsubpb.DeleteSubscriptionRequest{Subscription: "projects/test-project/subscriptions/wf-demo-storage-push"}))
	out = b.mustRun(b.h.Cleanup, "system", `{"catalog_id":"demo","schema_name":"s_demo"}`)
	require.Equal(t, "removed", out["outcome"])
	require.EqualValues(t, 2, out["objects_deleted"])
	require.EqualValues(t, 1, out["notifications_deleted"])
	require.Equal(t, true, out["bucket_deleted"])
	require.Equal(t, true, out["topic_deleted"])
	require.Equal(t, false, out["subscription_deleted"], "gone already")
	_, err = b.storageClient().Buckets.Get(bucket).Do()
	require.ErrorContains(t, err, "404")
	_, err = b.ps.Client.TopicAdminClient.GetTopic(b.ctx, &pubsubpb.GetTopicRequest{Topic: "projects/test-project/topics/wf-demo-storage"})
	require.Equal(t, codes.NotFound, status.Code(err))

	out = b.mustRun(b.h.Cleanup, "system", `{"catalog_id":"demo","schema_name":"s_demo"}`)
	require.Equal(t, "nothing", out["outcome"], "a second run finds nothing recorded")
}

// TestCleanupTenancy leaves every resource that is not labelled as the
// deleted tenant's.
func TestCleanupTenancy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.catalog("demo", "roads")
	b.mustRun(b.h.Provision, "s_demo", `{"catalog_id":"demo","schema_name":"s_demo"}`)
	bucket := "wf-test-project-demo"
	b.put(bucket, "demo/roads/a.geojson")
	// Someone relabelled the bucket as another tenant's.
	b.gcs.SetBucketMeta(bucket, map[string]string{"wf-managed": "true", "wf-tenant": "s_other"}, nil, nil)
	_, err := b.catalogs.Delete(b.ctx, "demo")
	require.NoError(t, err)
	// Inputs naming another tenant than recorded remove nothing.
	out := b.mustRun(b.h.Cleanup, "system", `{"catalog_id":"demo","schema_name":"s_intruder"}`)
	require.Equal(t, "skipped", out["outcome"])

	out = b.mustRun(b.h.Cleanup, "system", `{"catalog_id":"demo","schema_name":"s_demo"}`)
	require.Equal(t, false, out["bucket_deleted"])
	require.EqualValues(t, 0, out["objects_deleted"])
	require.Equal(t, []any{"bucket " + bucket}, out["refused"])
	require.Equal(t, true, out["topic_deleted"])
	require.Equal(t, true, out["subscription_deleted"])
	require.Equal(t, []string{"demo/roads/a.geojson"}, b.gcs.ObjectNames(bucket))
}
