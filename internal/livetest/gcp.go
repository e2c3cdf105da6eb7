package livetest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/googleapi"
	storagev1 "google.golang.org/api/storage/v1"
)

// DeleteGCP removes what a live test may have made: a bucket (every
// object generation first; its notification configurations go with it),
// subscriptions, then a topic, ignoring what does not exist. What it cannot
// delete is reported as a test error naming it, so an operator can remove
// it by hand. An empty name is skipped.
func DeleteGCP(t testing.TB, gcs *storagev1.Service, ps *pubsub.Client, bucket, topic string, subscriptions ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gone := func(err error) bool {
		var ge *googleapi.Error
		return err == nil || (errors.As(err, &ge) && ge.Code == http.StatusNotFound) || strings.Contains(err.Error(), "NotFound")
	}
	if bucket != "" {
		_ = gcs.Objects.List(bucket).Versions(true).Pages(ctx, func(o *storagev1.Objects) error {
			for _, it := range o.Items {
				if err := gcs.Objects.Delete(bucket, it.Name).Generation(it.Generation).Context(ctx).Do(); !gone(err) {
					t.Errorf("live cleanup: error deleting gs://%s/%s: %v", bucket, it.Name, err)
				}
			}
			return nil
		})
		if err := gcs.Buckets.Delete(bucket).Context(ctx).Do(); !gone(err) {
			t.Errorf("live cleanup: error deleting bucket %s: %v", bucket, err)
		}
	}
	for _, s := range subscriptions {
		if err := ps.SubscriptionAdminClient.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: s}); !gone(err) {
			t.Errorf("live cleanup: error deleting subscription %s: %v", s, err)
		}
	}
	if topic != "" {
		if err := ps.TopicAdminClient.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: topic}); !gone(err) {
			t.Errorf("live cleanup: error deleting topic %s: %v", topic, err)
		}
	}
}
