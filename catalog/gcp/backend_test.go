package gcp_test

import (
	"context"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/livetest"
)

// cloud is the Google Cloud a provisioning contract runs against: the
// in-process fakes (fakeCloud) or a real project (liveCloud, under make
// test-live). The contract reads both through the real clients only.
type cloud struct {
	settings config.GCP
	// storageOpts and pubsubOpts build the handlers' clients (nil: ADC).
	storageOpts, pubsubOpts []option.ClientOption
	storage                 *storagev1.Service
	pubsub                  *pubsub.Client
}

// names are a catalog's bucket and full topic and subscription names.
func (c cloud) names(catalogID string) (bucket, topic, sub string) {
	s := c.settings
	x := func(tmpl string) string {
		return strings.NewReplacer("{project}", s.Project, "{catalog}", catalogID).Replace(tmpl)
	}
	return x(s.BucketTemplate), "projects/" + s.Project + "/topics/" + x(s.TopicTemplate),
		"projects/" + s.Project + "/subscriptions/" + x(s.SubscriptionTemplate)
}

// baseSettings are the settings of both backends but the project's.
func baseSettings() config.GCP {
	s := config.Default().GCP
	s.PushEndpoint = "https://wf.example.com/hooks/gcs"
	s.PushServiceAccount = pushSA
	s.LifecycleDeleteAfterDays = 365
	return s
}

func fakeCloud(t *testing.T) cloud {
	t.Helper()
	gcs, ps := gcptest.NewStorage(t), gcptest.NewPubSub(t)
	s := baseSettings()
	s.Project = project
	opts := []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(gcs.Endpoint)}
	svc, err := storagev1.NewService(context.Background(), opts...)
	require.NoError(t, err)
	return cloud{settings: s, storageOpts: opts, pubsubOpts: ps.Options, storage: svc, pubsub: ps.Client}
}

// liveCloud is the project livetest.RequireGCP names, with names unique
// to the run; the resources of catalog "demo" are deleted when the test
// ends, whatever it did.
func liveCloud(t *testing.T) cloud {
	t.Helper()
	live := livetest.RequireGCP(t, true)
	ctx := context.Background()
	run := livetest.Name("wft")
	s := baseSettings()
	s.Project, s.Location, s.PushEndpoint, s.PushServiceAccount = live.Project, live.Location, live.PushEndpoint, live.PushServiceAccount
	s.BucketTemplate, s.TopicTemplate, s.SubscriptionTemplate = run+"-{catalog}", run+"-{catalog}-storage", run+"-{catalog}-storage-push"
	svc, err := storagev1.NewService(ctx, option.WithScopes(storagev1.DevstorageFullControlScope))
	require.NoError(t, err)
	client, err := pubsub.NewClient(ctx, live.Project)
	require.NoError(t, err)
	c := cloud{settings: s, storage: svc, pubsub: client}
	t.Cleanup(func() {
		defer func() { _ = client.Close() }()
		bucket, topic, sub := c.names("demo")
		livetest.DeleteGCP(t, svc, client, bucket, topic, sub)
	})
	return c
}
