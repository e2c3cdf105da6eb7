package gcp_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbtest"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/livetest"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners/builtin"
	"github.com/wfhq/wf/wftype"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

const (
	project = "test-project"
	pushSA  = "push@test-project.iam.gserviceaccount.com"
)

// bundle is one test's database, cloud fakes and handlers.
type bundle struct {
	t        *testing.T
	ctx      context.Context
	store    *store.Store
	catalogs *registry.Registry
	gcs      *gcptest.Storage
	ps       *gcptest.PubSub
	h        *gcp.Handlers
	settings config.GCP
}

// setupOn builds a bundle whose handlers use c's cloud (its gcs and ps,
// the fakes' helpers, are nil).
func setupOn(t *testing.T, c cloud) *bundle {
	t.Helper()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	b := &bundle{t: t, ctx: context.Background(), store: st, catalogs: registry.New(st, events.NewEmitter(st)), settings: c.settings}
	h, err := gcp.New(gcp.Deps{Store: st, Settings: c.settings, StorageOptions: c.storageOpts, PubSubOptions: c.pubsubOpts})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	b.h = h
	return b
}

func setup(t *testing.T, edit ...func(*config.GCP)) *bundle {
	t.Helper()
	pool := dbtest.NewPool(t)
	st := store.New(pool)
	b := &bundle{t: t, ctx: context.Background(), store: st, catalogs: registry.New(st, events.NewEmitter(st)),
		gcs: gcptest.NewStorage(t), ps: gcptest.NewPubSub(t)}
	b.settings = config.Default().GCP
	b.settings.Project = project
	b.settings.PushEndpoint = "https://wf.example.com/hooks/gcs"
	b.settings.PushServiceAccount = pushSA
	b.settings.LifecycleDeleteAfterDays = 365
	for _, e := range edit {
		e(&b.settings)
	}
	b.h = b.handlers(b.settings)
	return b
}

func (b *bundle) handlers(s config.GCP) *gcp.Handlers {
	h, err := gcp.New(gcp.Deps{Store: b.store, Settings: s,
		StorageOptions: []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(b.gcs.Endpoint)},
		PubSubOptions:  b.ps.Options})
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = h.Close() })
	return h
}

// catalog registers a catalog with collections.
func (b *bundle) catalog(id string, collections ...string) store.Catalog {
	b.t.Helper()
	c, err := b.catalogs.Create(b.ctx, registry.NewCatalog{ID: id})
	require.NoError(b.t, err)
	for _, col := range collections {
		_, err := b.catalogs.AddCollection(b.ctx, registry.NewCollection{CatalogID: id, ID: col})
		require.NoError(b.t, err)
	}
	return c
}

// run runs a handler on inputs as the tenant schema and decodes its outputs.
func (b *bundle) run(h builtin.Handler, schema, inputs string) (map[string]any, error) {
	b.t.Helper()
	out, err := h(b.ctx, &wftype.Task{SchemaName: schema, Inputs: json.RawMessage(inputs)}, reporters.Discard{})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	require.NoError(b.t, json.Unmarshal(out, &m))
	return m, nil
}

func (b *bundle) mustRun(h builtin.Handler, schema, inputs string) map[string]any {
	b.t.Helper()
	m, err := b.run(h, schema, inputs)
	require.NoError(b.t, err)
	return m
}

func outcome(m map[string]any, resource string) string {
	r, _ := m[resource].(map[string]any)
	s, _ := r["outcome"].(string)
	return s
}

func TestRegister(t *testing.T) {
	t.Parallel()
	_, err := gcp.New(gcp.Deps{})
	require.ErrorContains(t, err, "Store is required")
	_, err = gcp.New(gcp.Deps{Store: store.New(nil), Settings: config.GCP{ObjectPath: "{file}/{collection}"}})
	require.ErrorContains(t, err, "{file} must be the last segment")
	h, err := gcp.New(gcp.Deps{Store: store.New(nil), Settings: config.GCP{Project: project, PushEndpoint: "https://wf.example.com/hooks/gcs", PushServiceAccount: pushSA}})
	require.NoError(t, err)
	reg := builtin.NewRegistry()
	require.NoError(t, h.Register(reg))
	require.Subset(t, reg.Names(), gcp.Names())
}

// TestRegisterUnconfigured: without gcp.project the three handlers are
// marked unserved, naming the setting; without the push settings only
// gcp_provision is. A name the program registered keeps its handler.
func TestRegisterUnconfigured(t *testing.T) {
	t.Parallel()
	h, err := gcp.New(gcp.Deps{Store: store.New(nil)})
	require.NoError(t, err)
	reg := builtin.NewRegistry()
	require.NoError(t, h.Register(reg))
	for _, name := range gcp.Names() {
		_, ok := reg.Lookup(name)
		require.False(t, ok, name)
		reason, ok := reg.Unserved(name)
		require.True(t, ok, name)
		require.Equal(t, "gcp.project is not set (WF_GCP_PROJECT)", reason)
	}

	h, err = gcp.New(gcp.Deps{Store: store.New(nil), Settings: config.GCP{Project: project}})
	require.NoError(t, err)
	reg = builtin.NewRegistry()
	require.NoError(t, h.Register(reg))
	reason, ok := reg.Unserved(gcp.NameProvision)
	require.True(t, ok)
	require.Contains(t, reason, "gcp.push_endpoint and gcp.push_service_account are not set")
	for _, name := range []string{gcp.NameCleanup, gcp.NameStorageEvent} {
		_, ok := reg.Lookup(name)
		require.True(t, ok, name)
	}

	// A program's own handler stays, and the mark is refused.
	reg = builtin.NewRegistry()
	require.NoError(t, reg.Register(gcp.NameProvision, builtin.Noop))
	require.ErrorContains(t, h.Register(reg), "is registered")
	_, ok = reg.Lookup(gcp.NameProvision)
	require.True(t, ok)
	_, ok = reg.Unserved(gcp.NameProvision)
	require.False(t, ok)
}

// TestProvision creates a catalog's resources, finds them on a second run,
// and repairs drift on a third. A contract: on the fakes, and on a real
// project under make test-live (docs/live-tests.md).
func TestProvision(t *testing.T) {
	t.Parallel()
	livetest.Backends(t, fakeCloud, liveCloud, provision)
}

func provision(t *testing.T, c cloud) {
	b := setupOn(t, c)
	cat := b.catalog("demo", "roads")
	in := `{"catalog_id":"demo","schema_name":"s_demo"}`
	endpoint, sa := c.settings.PushEndpoint, c.settings.PushServiceAccount
	bucket, topicName, subName := c.names("demo")
	svc := c.storage
	// bucketMeta reads a bucket's labels, uniform access and lifecycle
	// through the JSON API.
	bucketMeta := func() (map[string]string, bool, string) {
		bk, err := svc.Buckets.Get(bucket).Do()
		require.NoError(t, err)
		uniform := bk.IamConfiguration != nil && bk.IamConfiguration.UniformBucketLevelAccess != nil && bk.IamConfiguration.UniformBucketLevelAccess.Enabled
		lifecycle, err := json.Marshal(bk.Lifecycle)
		require.NoError(t, err)
		return bk.Labels, uniform, string(lifecycle)
	}

	out := b.mustRun(b.h.Provision, cat.SchemaName, in)
	for _, r := range []string{"bucket", "topic", "notification", "subscription"} {
		require.Equal(t, "created", outcome(out, r), r)
	}
	labels, uniform, lifecycle := bucketMeta()
	require.Equal(t, map[string]string{"wf-managed": "true", "wf-tenant": "s_demo", "wf-catalog": "demo"}, labels)
	require.True(t, uniform)
	require.JSONEq(t, `{"rule":[{"action":{"type":"Delete"},"condition":{"age":365}}]}`, lifecycle)

	admin := c.pubsub.TopicAdminClient
	topic, err := admin.GetTopic(b.ctx, &pubsubpb.GetTopicRequest{Topic: topicName})
	require.NoError(t, err)
	require.Equal(t, "s_demo", topic.Labels["wf-tenant"])
	sub, err := c.pubsub.SubscriptionAdminClient.GetSubscription(b.ctx, &pubsubpb.GetSubscriptionRequest{Subscription: subName})
	require.NoError(t, err)
	require.Equal(t, topic.Name, sub.Topic)
	require.Equal(t, endpoint, sub.PushConfig.PushEndpoint)
	require.Equal(t, sa, sub.PushConfig.GetOidcToken().ServiceAccountEmail)
	require.Equal(t, endpoint, sub.PushConfig.GetOidcToken().Audience)
	nl, err := svc.Notifications.List(bucket).Do()
	require.NoError(t, err)
	require.Len(t, nl.Items, 1)
	require.Equal(t, "//pubsub.googleapis.com/"+topicName, nl.Items[0].Topic)
	require.Equal(t, "JSON_API_V1", nl.Items[0].PayloadFormat)
	require.ElementsMatch(t, []string{"OBJECT_FINALIZE", "OBJECT_DELETE", "OBJECT_ARCHIVE"}, nl.Items[0].EventTypes)
	rec, err := b.store.GetGCPResources(b.ctx, "demo")
	require.NoError(t, err)
	require.Equal(t, bucket, rec.Bucket)
	require.NotEmpty(t, rec.NotificationID)

	// Again: everything is found as it should be.
	out = b.mustRun(b.h.Provision, cat.SchemaName, in)
	for _, r := range []string{"bucket", "topic", "notification", "subscription"} {
		require.Equal(t, "found", outcome(out, r), r)
	}

	// Drift: a label, uniform access and the lifecycle changed by hand, the
	// topic's labels removed, the push endpoint changed.
	_, err = svc.Buckets.Patch(bucket, &storagev1.Bucket{
		Labels: map[string]string{"team": "geo"},
		IamConfiguration: &storagev1.BucketIamConfiguration{UniformBucketLevelAccess: &storagev1.BucketIamConfigurationUniformBucketLevelAccess{
			Enabled: false, ForceSendFields: []string{"Enabled"}}},
		NullFields: []string{"Labels.wf-catalog", "Lifecycle"},
	}).Do()
	require.NoError(t, err)
	labels, uniform, _ = bucketMeta()
	require.Equal(t, map[string]string{"wf-managed": "true", "wf-tenant": "s_demo", "team": "geo"}, labels)
	require.False(t, uniform)
	_, err = admin.UpdateTopic(b.ctx, &pubsubpb.UpdateTopicRequest{Topic: &pubsubpb.Topic{Name: topic.Name, Labels: map[string]string{"wf-managed": "true", "wf-tenant": "s_demo"}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}}})
	require.NoError(t, err)
	_, err = c.pubsub.SubscriptionAdminClient.UpdateSubscription(b.ctx, &pubsubpb.UpdateSubscriptionRequest{
		Subscription: &pubsubpb.Subscription{Name: sub.Name, PushConfig: &pubsubpb.PushConfig{PushEndpoint: "https://elsewhere.example.com/"}},
		UpdateMask:   &fieldmaskpb.FieldMask{Paths: []string{"push_config"}}})
	require.NoError(t, err)

	out = b.mustRun(b.h.Provision, cat.SchemaName, in)
	require.Equal(t, "fixed", outcome(out, "bucket"))
	require.ElementsMatch(t, []any{"labels", "uniform_bucket_level_access", "lifecycle"}, out["bucket"].(map[string]any)["fixed"])
	require.Equal(t, "fixed", outcome(out, "topic"))
	require.Equal(t, "found", outcome(out, "notification"))
	require.Equal(t, "fixed", outcome(out, "subscription"))
	labels, uniform, lifecycle = bucketMeta()
	require.Equal(t, map[string]string{"wf-managed": "true", "wf-tenant": "s_demo", "wf-catalog": "demo", "team": "geo"}, labels,
		"a label of the user's stays")
	require.True(t, uniform)
	require.JSONEq(t, `{"rule":[{"action":{"type":"Delete"},"condition":{"age":365}}]}`, lifecycle)
	sub, err = c.pubsub.SubscriptionAdminClient.GetSubscription(b.ctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub.Name})
	require.NoError(t, err)
	require.Equal(t, endpoint, sub.PushConfig.PushEndpoint)
	require.Equal(t, sa, sub.PushConfig.GetOidcToken().ServiceAccountEmail)

	// A notification configuration of wf's topic that is wrong is replaced.
	_, err = svc.Notifications.Insert(bucket, &storagev1.Notification{Topic: "//pubsub.googleapis.com/" + topic.Name,
		EventTypes: []string{"OBJECT_FINALIZE"}, PayloadFormat: "NONE"}).Do()
	require.NoError(t, err)
	out = b.mustRun(b.h.Provision, cat.SchemaName, in)
	require.Equal(t, "fixed", outcome(out, "notification"))
	nl, err = svc.Notifications.List(bucket).Do()
	require.NoError(t, err)
	require.Len(t, nl.Items, 1)
	require.Equal(t, "JSON_API_V1", nl.Items[0].PayloadFormat)

	out = b.mustRun(b.h.Provision, cat.SchemaName, in)
	for _, r := range []string{"bucket", "topic", "notification", "subscription"} {
		require.Equal(t, "found", outcome(out, r), r)
	}
}

// storageClient is a client of the test's Cloud Storage.
func (b *bundle) storageClient() *storagev1.Service {
	b.t.Helper()
	svc, err := storagev1.NewService(b.ctx, option.WithoutAuthentication(), option.WithEndpoint(b.gcs.Endpoint))
	require.NoError(b.t, err)
	return svc
}

// TestProvisionTenancy: a bucket or topic of another tenant, or one wf
// did not make, is never adopted; inputs naming another tenant fail.
func TestProvisionTenancy(t *testing.T) {
	t.Parallel()
	b := setup(t, func(s *config.GCP) { s.BucketTemplate = "shared-bucket-{project}{schema}" })
	b.catalog("one")
	b.catalog("two")
	// The bucket of "two" exists already, labelled as another tenant's.
	b.gcs.Fake.CreateBucketWithOpts(fakeBucket("shared-bucket-test-projects_two"))
	b.gcs.SetBucketMeta("shared-bucket-test-projects_two", map[string]string{"wf-managed": "true", "wf-tenant": "s_other"}, nil, nil)
	_, err := b.run(b.h.Provision, "s_two", `{"catalog_id":"two","schema_name":"s_two"}`)
	require.ErrorContains(t, err, "is tenant s_other's, not s_two's")
	require.True(t, wftype.IsPermanent(err))
	require.Equal(t, "s_other", b.gcs.BucketLabels("shared-bucket-test-projects_two")["wf-tenant"], "nothing changed")

	b.gcs.Fake.CreateBucketWithOpts(fakeBucket("shared-bucket-test-projects_one"))
	_, err = b.run(b.h.Provision, "s_one", `{"catalog_id":"one","schema_name":"s_one"}`)
	require.ErrorContains(t, err, "exists without wf's labels")
	require.Nil(t, b.gcs.BucketLabels("shared-bucket-test-projects_one"))

	// The task's tenant must be the catalog's.
	_, err = b.run(b.h.Provision, "s_two", `{"catalog_id":"one","schema_name":"s_one"}`)
	require.ErrorContains(t, err, "belongs to tenant s_one")
	require.True(t, wftype.IsPermanent(err))

	// A deleted catalog is skipped (a true outcome); without a project
	// the handler fails for good, naming the setting: it never passes for
	// a provisioning (Register marks it unserved, TestRegisterUnconfigured).
	out := b.mustRun(b.h.Provision, "s_gone", `{"catalog_id":"gone","schema_name":"s_gone"}`)
	require.Equal(t, "skipped", out["outcome"])
	require.Equal(t, "the catalog no longer exists", out["reason"])
	noProject := b.settings
	noProject.Project = ""
	_, err = b.run(b.handlers(noProject).Provision, "s_one", `{"catalog_id":"one","schema_name":"s_one"}`)
	require.ErrorContains(t, err, "gcp.project is not set (WF_GCP_PROJECT)")
	require.True(t, wftype.IsPermanent(err))
}

func fakeBucket(name string) fakestorage.CreateBucketOpts {
	return fakestorage.CreateBucketOpts{Name: name}
}

func registryCollection(catalogID, id, layerConfig string) registry.NewCollection {
	return registry.NewCollection{CatalogID: catalogID, ID: id, LayerConfig: json.RawMessage(layerConfig)}
}
