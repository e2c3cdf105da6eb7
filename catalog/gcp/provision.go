package gcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	psadmin "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/googleapi"
	storage "google.golang.org/api/storage/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

// Outcomes of one resource in gcp_provision's outputs.
const (
	outcomeCreated = "created" // it did not exist: made
	outcomeFound   = "found"   // it existed as it should
	outcomeFixed   = "fixed"   // it existed with drift, now repaired (see fixed)
)

// notifyEvents are the object events a catalog's bucket notifies, with the
// full JSON resource as payload.
var notifyEvents = []string{"OBJECT_FINALIZE", "OBJECT_DELETE", "OBJECT_ARCHIVE"}

const payloadJSON = "JSON_API_V1"

// resourceOutcome is what gcp_provision did with one resource.
type resourceOutcome struct {
	Name    string   `json:"name"`
	Outcome string   `json:"outcome"`
	Fixed   []string `json:"fixed,omitempty"`
	// Note says what could not be repaired (a bucket's location).
	Note string `json:"note,omitempty"`
}

func (r *resourceOutcome) fix(what string) {
	r.Outcome = outcomeFixed
	r.Fixed = append(r.Fixed, what)
}

// provisionInputs are a gcp_provision task's inputs (from catalog.created).
type provisionInputs struct {
	CatalogID  string `json:"catalog_id"`
	SchemaName string `json:"schema_name"`
}

// provisionOutputs are a gcp_provision task's outputs.
type provisionOutputs struct {
	CatalogID    string           `json:"catalog_id"`
	Outcome      string           `json:"outcome,omitempty"` // "skipped" when the catalog is gone
	Reason       string           `json:"reason,omitempty"`
	Bucket       *resourceOutcome `json:"bucket,omitempty"`
	Topic        *resourceOutcome `json:"topic,omitempty"`
	Notification *resourceOutcome `json:"notification,omitempty"`
	Subscription *resourceOutcome `json:"subscription,omitempty"`
}

// Provision is the gcp_provision handler: it creates the catalog's bucket,
// topic, notification configuration and push subscription, or verifies
// them and repairs drift, and records them as the catalog's. Running it
// again changes nothing that is as it should be.
func (h *Handlers) Provision(ctx context.Context, task *wftype.Task, _ reporters.Reporter) (json.RawMessage, error) {
	var in provisionInputs
	if err := builtin.ReadInputs(task.Inputs, &in, "inputs"); err != nil {
		return nil, err
	}
	if h.d.Settings.Project == "" {
		// Register marks the handler unserved then; called all the same
		// (an embedding program), it fails for good rather than pass for
		// a provisioning.
		return nil, errNoProject
	}
	cat, err := h.d.Store.GetCatalog(ctx, in.CatalogID)
	switch {
	case errors.Is(err, wftype.ErrNotFound):
		return json.Marshal(provisionOutputs{CatalogID: in.CatalogID, Outcome: "skipped", Reason: "the catalog no longer exists"})
	case err != nil:
		return nil, err
	case cat.SchemaName != in.SchemaName || (task.SchemaName != "" && task.SchemaName != cat.SchemaName):
		return nil, wftype.Permanent(fmt.Errorf("catalog %s belongs to tenant %s, not %s", in.CatalogID, cat.SchemaName, in.SchemaName))
	}
	if h.d.Settings.PushEndpoint == "" || h.d.Settings.PushServiceAccount == "" {
		return nil, wftype.Permanent(errors.New(noPush))
	}
	n, err := h.resourceNames(cat.ID, cat.SchemaName)
	if err != nil {
		return nil, err
	}
	gcs, ps, err := h.clients(ctx)
	if err != nil {
		return nil, err
	}
	labels := wantLabels(cat.ID, cat.SchemaName)
	out := provisionOutputs{CatalogID: cat.ID}
	if out.Bucket, err = h.ensureBucket(ctx, gcs, n.Bucket, cat.SchemaName, labels); err != nil {
		return nil, err
	}
	if out.Topic, err = ensureTopic(ctx, ps.TopicAdminClient, n.Topic, cat.SchemaName, labels); err != nil {
		return nil, err
	}
	var notificationID string
	if out.Notification, notificationID, err = h.ensureNotification(ctx, gcs, n.Bucket, n.Topic, cat.ID); err != nil {
		return nil, err
	}
	if out.Subscription, err = h.ensureSubscription(ctx, ps.SubscriptionAdminClient, n, cat.SchemaName, labels); err != nil {
		return nil, err
	}
	_, err = h.d.Store.SaveGCPResources(ctx, store.GCPResources{
		CatalogID: cat.ID, SchemaName: cat.SchemaName, Project: h.d.Settings.Project,
		Bucket: n.Bucket, Topic: n.Topic, Subscription: n.Subscription, NotificationID: notificationID,
	})
	if errors.Is(err, wftype.ErrConflict) {
		return nil, wftype.Permanent(err)
	}
	if err != nil {
		return nil, err
	}
	h.log.Info("gcp resources provisioned", "catalog_id", cat.ID, "bucket", n.Bucket+" "+out.Bucket.Outcome,
		"topic", out.Topic.Outcome, "notification", out.Notification.Outcome, "subscription", out.Subscription.Outcome)
	return json.Marshal(out)
}

// wantLifecycle is the lifecycle the configuration asks for (nil: none).
func (h *Handlers) wantLifecycle() *storage.BucketLifecycle {
	var rules []*storage.BucketLifecycleRule
	if d := h.d.Settings.LifecycleArchiveAfterDays; d > 0 {
		rules = append(rules, &storage.BucketLifecycleRule{
			Action:    &storage.BucketLifecycleRuleAction{Type: "SetStorageClass", StorageClass: "ARCHIVE"},
			Condition: &storage.BucketLifecycleRuleCondition{Age: googleapi.Int64(int64(d))},
		})
	}
	if d := h.d.Settings.LifecycleDeleteAfterDays; d > 0 {
		rules = append(rules, &storage.BucketLifecycleRule{
			Action:    &storage.BucketLifecycleRuleAction{Type: "Delete"},
			Condition: &storage.BucketLifecycleRuleCondition{Age: googleapi.Int64(int64(d))},
		})
	}
	if rules == nil {
		return nil
	}
	return &storage.BucketLifecycle{Rule: rules}
}

// lifecycleKey is a comparable form of a lifecycle's rules.
func lifecycleKey(l *storage.BucketLifecycle) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, r := range l.Rule {
		if r == nil || r.Action == nil || r.Condition == nil || r.Condition.Age == nil {
			out = append(out, "?")
			continue
		}
		out = append(out, fmt.Sprintf("%s/%s/%d", r.Action.Type, r.Action.StorageClass, *r.Condition.Age))
	}
	slices.Sort(out)
	return out
}

// ensureBucket creates the bucket or verifies and repairs its labels,
// uniform bucket-level access and lifecycle. A bucket of that name that is
// another tenant's, or not wf's, is never adopted.
func (h *Handlers) ensureBucket(ctx context.Context, gcs *storage.Service, name, schemaName string, labels map[string]string) (*resourceOutcome, error) {
	out := &resourceOutcome{Name: name, Outcome: outcomeFound}
	lifecycle := h.wantLifecycle()
	b, err := gcs.Buckets.Get(name).Context(ctx).Do()
	if httpStatus(err) == http.StatusNotFound {
		_, err = gcs.Buckets.Insert(h.d.Settings.Project, &storage.Bucket{
			Name: name, Location: h.d.Settings.Location, Labels: labels,
			IamConfiguration: &storage.BucketIamConfiguration{UniformBucketLevelAccess: &storage.BucketIamConfigurationUniformBucketLevelAccess{Enabled: true}},
			Lifecycle:        lifecycle,
		}).Context(ctx).Do()
		if err == nil {
			out.Outcome = outcomeCreated
			return out, nil
		}
		if httpStatus(err) != http.StatusConflict {
			return nil, gcsError("creating bucket "+name, err)
		}
		// Created meanwhile (a concurrent run, or someone else): verify it.
		b, err = gcs.Buckets.Get(name).Context(ctx).Do()
	}
	if err != nil {
		if httpStatus(err) == http.StatusForbidden {
			return nil, wftype.Permanent(fmt.Errorf("bucket %s exists and is not this project's: choose another gcp.bucket_template", name))
		}
		return nil, gcsError("reading bucket "+name, err)
	}
	switch ownerOf(b.Labels, schemaName) {
	case ownedByOther:
		return nil, wftype.Permanent(fmt.Errorf("bucket %s is tenant %s's, not %s's", name, b.Labels[labelTenant], schemaName))
	case ownedByNoOneWF:
		return nil, wftype.Permanent(fmt.Errorf("bucket %s exists without wf's labels: wf adopts no bucket it did not create; choose another gcp.bucket_template", name))
	}
	patch := &storage.Bucket{}
	if labelsDrift(b.Labels, labels) {
		patch.Labels = mergeLabels(b.Labels, labels)
		out.fix("labels")
	}
	if b.IamConfiguration == nil || b.IamConfiguration.UniformBucketLevelAccess == nil || !b.IamConfiguration.UniformBucketLevelAccess.Enabled {
		patch.IamConfiguration = &storage.BucketIamConfiguration{UniformBucketLevelAccess: &storage.BucketIamConfigurationUniformBucketLevelAccess{Enabled: true}}
		out.fix("uniform_bucket_level_access")
	}
	if !slices.Equal(lifecycleKey(b.Lifecycle), lifecycleKey(lifecycle)) {
		patch.Lifecycle = lifecycle
		if lifecycle == nil {
			patch.Lifecycle = &storage.BucketLifecycle{}
			patch.ForceSendFields = []string{"Lifecycle"}
		}
		out.fix("lifecycle")
	}
	if want := h.d.Settings.Location; b.Location != "" && !equalFoldASCII(b.Location, want) {
		out.Note = fmt.Sprintf("the bucket is in %s, not %s (gcp.location): a bucket cannot move", b.Location, want)
	}
	if out.Outcome == outcomeFixed {
		if _, err := gcs.Buckets.Patch(name, patch).Context(ctx).Do(); err != nil {
			return nil, gcsError("repairing bucket "+name, err)
		}
	}
	return out, nil
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		ca, cb := a[i]|0x20, b[i]|0x20
		if ca != cb {
			return false
		}
	}
	return true
}

// topicRef is how a notification configuration names a topic.
func topicRef(topic string) string { return "//pubsub.googleapis.com/" + topic }

// ensureNotification makes sure the bucket notifies the topic of finalize,
// delete and archive with JSON payloads: one configuration, re-created when
// it differs (configurations cannot be changed). It returns its id.
func (h *Handlers) ensureNotification(ctx context.Context, gcs *storage.Service, bucket, topic, catalogID string) (*resourceOutcome, string, error) {
	out := &resourceOutcome{Name: bucket + " → " + topic}
	list, err := gcs.Notifications.List(bucket).Context(ctx).Do()
	if err != nil {
		return nil, "", gcsError("listing the notifications of bucket "+bucket, err)
	}
	var keep string
	for _, n := range list.Items {
		if n.Topic != topicRef(topic) && n.Topic != topic {
			continue
		}
		events := slices.Sorted(slices.Values(n.EventTypes))
		if keep == "" && n.PayloadFormat == payloadJSON && slices.Equal(events, slices.Sorted(slices.Values(notifyEvents))) && n.ObjectNamePrefix == "" {
			keep = n.Id
			continue
		}
		// Ours, but wrong (or a second one): it goes.
		if err := gcs.Notifications.Delete(bucket, n.Id).Context(ctx).Do(); err != nil && httpStatus(err) != http.StatusNotFound {
			return nil, "", gcsError("deleting notification "+n.Id+" of bucket "+bucket, err)
		}
		out.fix("notification " + n.Id + " replaced")
	}
	if keep != "" {
		if out.Outcome == "" {
			out.Outcome = outcomeFound
		}
		return out, keep, nil
	}
	n, err := gcs.Notifications.Insert(bucket, &storage.Notification{
		Topic: topicRef(topic), EventTypes: notifyEvents, PayloadFormat: payloadJSON,
		CustomAttributes: map[string]string{labelCatalog: catalogID},
	}).Context(ctx).Do()
	if err != nil {
		return nil, "", gcsError("creating the notification of bucket "+bucket, err)
	}
	if out.Outcome == "" {
		out.Outcome = outcomeCreated
	}
	return out, n.Id, nil
}

// ensureTopic creates the topic or verifies and repairs its labels.
func ensureTopic(ctx context.Context, admin *psadmin.TopicAdminClient, name, schemaName string, labels map[string]string) (*resourceOutcome, error) {
	out := &resourceOutcome{Name: name, Outcome: outcomeFound}
	t, err := admin.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: name})
	if status.Code(err) == codes.NotFound {
		_, err = admin.CreateTopic(ctx, &pubsubpb.Topic{Name: name, Labels: labels})
		if err == nil {
			out.Outcome = outcomeCreated
			return out, nil
		}
		if status.Code(err) != codes.AlreadyExists {
			return nil, fmt.Errorf("error creating topic %s: %w", name, err)
		}
		t, err = admin.GetTopic(ctx, &pubsubpb.GetTopicRequest{Topic: name})
	}
	if err != nil {
		return nil, fmt.Errorf("error reading topic %s: %w", name, err)
	}
	if err := checkOwner("topic", name, t.Labels, schemaName); err != nil {
		return nil, err
	}
	if labelsDrift(t.Labels, labels) {
		_, err := admin.UpdateTopic(ctx, &pubsubpb.UpdateTopicRequest{
			Topic:      &pubsubpb.Topic{Name: name, Labels: mergeLabels(t.Labels, labels)},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}},
		})
		if err != nil {
			return nil, fmt.Errorf("error repairing the labels of topic %s: %w", name, err)
		}
		out.fix("labels")
	}
	return out, nil
}

// checkOwner refuses a resource that is not this tenant's.
func checkOwner(kind, name string, labels map[string]string, schemaName string) error {
	switch ownerOf(labels, schemaName) {
	case ownedByOther:
		return wftype.Permanent(fmt.Errorf("%s %s is tenant %s's, not %s's", kind, name, labels[labelTenant], schemaName))
	case ownedByNoOneWF:
		return wftype.Permanent(fmt.Errorf("%s %s exists without wf's labels: wf adopts nothing it did not create", kind, name))
	}
	return nil
}

// wantPushConfig is the push configuration of a catalog's subscription.
func (h *Handlers) wantPushConfig() *pubsubpb.PushConfig {
	s := h.d.Settings
	return &pubsubpb.PushConfig{
		PushEndpoint: s.PushEndpoint,
		AuthenticationMethod: &pubsubpb.PushConfig_OidcToken_{OidcToken: &pubsubpb.PushConfig_OidcToken{
			ServiceAccountEmail: s.PushServiceAccount, Audience: h.audience(),
		}},
	}
}

// audience is the audience of the push's OIDC token.
func (h *Handlers) audience() string {
	if h.d.Settings.PushAudience != "" {
		return h.d.Settings.PushAudience
	}
	return h.d.Settings.PushEndpoint
}

// pushDrift reports whether a subscription's push configuration differs
// from the wanted one.
func pushDrift(have, want *pubsubpb.PushConfig) bool {
	if have == nil || have.PushEndpoint != want.PushEndpoint {
		return true
	}
	h, w := have.GetOidcToken(), want.GetOidcToken()
	return h == nil || h.ServiceAccountEmail != w.ServiceAccountEmail || h.Audience != w.Audience
}

// ensureSubscription creates the push subscription or verifies and repairs
// its push configuration and labels; one on another topic is re-created
// (a subscription's topic cannot change).
func (h *Handlers) ensureSubscription(ctx context.Context, admin *psadmin.SubscriptionAdminClient, n names, schemaName string, labels map[string]string) (*resourceOutcome, error) {
	out := &resourceOutcome{Name: n.Subscription, Outcome: outcomeFound}
	want := &pubsubpb.Subscription{Name: n.Subscription, Topic: n.Topic, PushConfig: h.wantPushConfig(), Labels: labels, AckDeadlineSeconds: 60}
	create := func() error {
		_, err := admin.CreateSubscription(ctx, want)
		if err != nil {
			return fmt.Errorf("error creating subscription %s: %w", n.Subscription, err)
		}
		return nil
	}
	s, err := admin.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: n.Subscription})
	if status.Code(err) == codes.NotFound {
		if err := create(); err != nil {
			return nil, err
		}
		out.Outcome = outcomeCreated
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading subscription %s: %w", n.Subscription, err)
	}
	if err := checkOwner("subscription", n.Subscription, s.Labels, schemaName); err != nil {
		return nil, err
	}
	if s.Topic != n.Topic {
		if err := admin.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: n.Subscription}); err != nil && status.Code(err) != codes.NotFound {
			return nil, fmt.Errorf("error deleting subscription %s (on topic %s): %w", n.Subscription, s.Topic, err)
		}
		if err := create(); err != nil {
			return nil, err
		}
		out.fix("topic")
		return out, nil
	}
	var mask []string
	upd := &pubsubpb.Subscription{Name: n.Subscription}
	if pushDrift(s.PushConfig, want.PushConfig) {
		upd.PushConfig, mask = want.PushConfig, append(mask, "push_config")
		out.fix("push_config")
	}
	if labelsDrift(s.Labels, labels) {
		upd.Labels, mask = mergeLabels(s.Labels, labels), append(mask, "labels")
		out.fix("labels")
	}
	if len(mask) > 0 {
		if _, err := admin.UpdateSubscription(ctx, &pubsubpb.UpdateSubscriptionRequest{Subscription: upd, UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}}); err != nil {
			return nil, fmt.Errorf("error repairing subscription %s: %w", n.Subscription, err)
		}
	}
	return out, nil
}

// httpStatus is the HTTP status of a Cloud Storage error (0 for others).
func httpStatus(err error) int {
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		return gerr.Code
	}
	return 0
}

// gcsError wraps a Cloud Storage error; a 4xx other than 408 and 429 will
// not go away by retrying, so it fails the task for good.
func gcsError(doing string, err error) error {
	err = fmt.Errorf("error %s: %w", doing, err)
	if c := httpStatus(err); c >= 400 && c < 500 && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests {
		return wftype.Permanent(err)
	}
	return err
}
