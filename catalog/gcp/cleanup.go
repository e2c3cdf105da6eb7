package gcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	psadmin "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	storage "google.golang.org/api/storage/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// cleanupInputs are a gcp_catalog_cleanup task's inputs: a deleted catalog,
// or one deleted collection of a catalog (CollectionID set).
type cleanupInputs struct {
	CatalogID    string `json:"catalog_id"`
	SchemaName   string `json:"schema_name"`
	CollectionID string `json:"collection_id,omitempty"`
}

// cleanupOutputs count what gcp_catalog_cleanup removed.
type cleanupOutputs struct {
	CatalogID            string   `json:"catalog_id"`
	CollectionID         string   `json:"collection_id,omitempty"`
	Outcome              string   `json:"outcome"` // removed | nothing | skipped
	Reason               string   `json:"reason,omitempty"`
	ObjectsDeleted       int      `json:"objects_deleted"`
	NotificationsDeleted int      `json:"notifications_deleted"`
	BucketDeleted        bool     `json:"bucket_deleted"`
	TopicDeleted         bool     `json:"topic_deleted"`
	SubscriptionDeleted  bool     `json:"subscription_deleted"`
	Refused              []string `json:"refused,omitempty"` // resources left: not this tenant's
}

// Cleanup is the gcp_catalog_cleanup handler. For a deleted catalog it
// removes the subscription, the bucket's notification configurations, its
// objects, the bucket and the topic recorded for the catalog; for a deleted
// collection, the objects under the collection's prefix. It removes only
// resources labelled as the deleted tenant's, only once the registry says
// the catalog or collection is gone, and is idempotent: a retry after a
// partial failure finds what is left (the record goes last).
func (h *Handlers) Cleanup(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in cleanupInputs
	if err := builtin.ReadInputs(task.Inputs, &in, "inputs"); err != nil {
		return nil, err
	}
	out := cleanupOutputs{CatalogID: in.CatalogID, CollectionID: in.CollectionID, Outcome: "removed"}
	skip := func(reason string) (json.RawMessage, error) {
		out.Outcome, out.Reason = "skipped", reason
		return json.Marshal(out)
	}
	// The registry's record of the deletion comes first.
	if in.CollectionID != "" {
		_, err := h.d.Store.GetCollection(ctx, in.CatalogID, in.CollectionID)
		if err == nil {
			return skip("the collection exists (registered again)")
		}
		if !errors.Is(err, wftype.ErrNotFound) {
			return nil, err
		}
	} else {
		cat, err := h.d.Store.GetCatalog(ctx, in.CatalogID)
		if err == nil && cat.SchemaName == in.SchemaName {
			return skip("the catalog exists (registered again)")
		}
		if err != nil && !errors.Is(err, wftype.ErrNotFound) {
			return nil, err
		}
	}
	rec, err := h.d.Store.GetGCPResources(ctx, in.CatalogID)
	if errors.Is(err, wftype.ErrNotFound) {
		out.Outcome, out.Reason = "nothing", "no cloud resources are recorded for the catalog"
		return json.Marshal(out)
	}
	if err != nil {
		return nil, err
	}
	if rec.SchemaName != in.SchemaName {
		return skip(fmt.Sprintf("the recorded resources are tenant %s's", rec.SchemaName))
	}
	gcs, ps, err := h.clients(ctx)
	if err != nil {
		return nil, err
	}
	if in.CollectionID != "" {
		if err := h.cleanCollection(ctx, gcs, rec, in, &out); err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
	if err := cleanSubscription(ctx, ps.SubscriptionAdminClient, rec, &out); err != nil {
		return nil, err
	}
	if err := cleanBucket(ctx, gcs, rec, &out); err != nil {
		return nil, err
	}
	if err := cleanTopic(ctx, ps.TopicAdminClient, rec, &out); err != nil {
		return nil, err
	}
	if _, err := h.d.Store.DeleteGCPResources(ctx, rec.CatalogID, rec.SchemaName); err != nil {
		return nil, err
	}
	h.log.Info("gcp resources removed", "catalog_id", in.CatalogID, "objects", out.ObjectsDeleted,
		"bucket", out.BucketDeleted, "topic", out.TopicDeleted, "subscription", out.SubscriptionDeleted)
	return json.Marshal(out)
}

// cleanCollection deletes the objects under a deleted collection's prefix.
func (h *Handlers) cleanCollection(ctx context.Context, gcs *storage.Service, rec store.GCPResources, in cleanupInputs, out *cleanupOutputs) error {
	if ok, err := tenantBucket(ctx, gcs, rec, out); !ok || err != nil {
		return err
	}
	n, err := deleteObjects(ctx, gcs, rec.Bucket, h.paths.prefix(in.CatalogID, in.CollectionID))
	out.ObjectsDeleted += n
	return err
}

// tenantBucket reports whether rec's bucket exists and is labelled as rec's
// tenant's; one that is not is listed as refused.
func tenantBucket(ctx context.Context, gcs *storage.Service, rec store.GCPResources, out *cleanupOutputs) (bool, error) {
	b, err := gcs.Buckets.Get(rec.Bucket).Context(ctx).Do()
	if httpStatus(err) == http.StatusNotFound {
		return false, nil
	}
	if err != nil {
		return false, gcsError("reading bucket "+rec.Bucket, err)
	}
	if ownerOf(b.Labels, rec.SchemaName) != ownedByTenant {
		out.Refused = append(out.Refused, "bucket "+rec.Bucket)
		return false, nil
	}
	return true, nil
}

// deleteObjects deletes every object (every generation) under prefix.
func deleteObjects(ctx context.Context, gcs *storage.Service, bucket, prefix string) (int, error) {
	var n int
	err := gcs.Objects.List(bucket).Prefix(prefix).Versions(true).Context(ctx).Pages(ctx, func(page *storage.Objects) error {
		for _, o := range page.Items {
			err := gcs.Objects.Delete(bucket, o.Name).Generation(o.Generation).Context(ctx).Do()
			if err != nil && httpStatus(err) != http.StatusNotFound {
				return gcsError(fmt.Sprintf("deleting gs://%s/%s", bucket, o.Name), err)
			}
			if err == nil {
				n++
			}
		}
		return nil
	})
	if err != nil && httpStatus(err) == http.StatusNotFound {
		return n, nil
	}
	if err != nil {
		return n, gcsError("listing the objects of bucket "+bucket, err)
	}
	return n, nil
}

// cleanBucket deletes the bucket's notification configurations, its
// objects and the bucket, when it is the tenant's.
func cleanBucket(ctx context.Context, gcs *storage.Service, rec store.GCPResources, out *cleanupOutputs) error {
	if ok, err := tenantBucket(ctx, gcs, rec, out); !ok || err != nil {
		return err
	}
	list, err := gcs.Notifications.List(rec.Bucket).Context(ctx).Do()
	if err != nil {
		return gcsError("listing the notifications of bucket "+rec.Bucket, err)
	}
	for _, nc := range list.Items {
		err := gcs.Notifications.Delete(rec.Bucket, nc.Id).Context(ctx).Do()
		if err != nil && httpStatus(err) != http.StatusNotFound {
			return gcsError("deleting notification "+nc.Id+" of bucket "+rec.Bucket, err)
		}
		if err == nil {
			out.NotificationsDeleted++
		}
	}
	n, err := deleteObjects(ctx, gcs, rec.Bucket, "")
	out.ObjectsDeleted += n
	if err != nil {
		return err
	}
	err = gcs.Buckets.Delete(rec.Bucket).Context(ctx).Do()
	if err != nil && httpStatus(err) != http.StatusNotFound {
		return gcsError("deleting bucket "+rec.Bucket, err)
	}
	out.BucketDeleted = err == nil
	return nil
}

// cleanSubscription deletes the push subscription when it is the tenant's.
func cleanSubscription(ctx context.Context, admin *psadmin.SubscriptionAdminClient, rec store.GCPResources, out *cleanupOutputs) error {
	var err error
	out.SubscriptionDeleted, err = deleteLabelled(rec, out, "subscription", rec.Subscription,
		func() (map[string]string, error) {
			s, err := admin.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: rec.Subscription})
			return s.GetLabels(), err
		},
		func() error {
			return admin.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: rec.Subscription})
		})
	return err
}

// cleanTopic deletes the topic when it is the tenant's.
func cleanTopic(ctx context.Context, admin *psadmin.TopicAdminClient, rec store.GCPResources, out *cleanupOutputs) error {
	var err error
	out.TopicDeleted, err = deleteLabelled(rec, out, "topic", rec.Topic,
		func() (map[string]string, error) {
			t, err := admin.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: rec.Topic})
			return t.GetLabels(), err
		},
		func() error { return admin.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: rec.Topic}) })
	return err
}

// deleteLabelled deletes a Pub/Sub resource read by get when its labels say
// it is rec's tenant's (else it is listed as refused); a resource already
// gone is no error. It reports whether this call deleted it.
func deleteLabelled(rec store.GCPResources, out *cleanupOutputs, kind, name string,
	get func() (map[string]string, error), del func() error) (bool, error) {
	labels, err := get()
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error reading %s %s: %w", kind, name, err)
	}
	if ownerOf(labels, rec.SchemaName) != ownedByTenant {
		out.Refused = append(out.Refused, kind+" "+name)
		return false, nil
	}
	err = del()
	if err != nil && status.Code(err) != codes.NotFound {
		return false, fmt.Errorf("error deleting %s %s: %w", kind, name, err)
	}
	return err == nil, nil
}
