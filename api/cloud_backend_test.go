package api_test

import (
	"context"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"

	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/livetest"
)

// The push subscription of the fake GCP end-to-end tests: Pub/Sub pushes to
// pushEndpoint with tokens for pushServiceAccount.
const (
	pushEndpoint       = "https://wf.example.com/hooks/gcs"
	pushServiceAccount = "push@test-project.iam.gserviceaccount.com"
)

// cloudBackend is the Google Cloud a cloud contract runs against: the
// in-process fakes (fakeCloud) or a real project (liveCloud). The contract
// sees both through the real clients only.
type cloudBackend struct {
	// deps are the gcp handlers' dependencies (Store is set by setup).
	deps gcp.Deps
	// storage reads and writes the buckets as the test's own client.
	storage *storagev1.Service
	// pubsub is a Pub/Sub client of the backend's project, which relays a
	// topic's notifications to /hooks/gcs (gcptest.PubSub.Relay): a test
	// machine has no address Pub/Sub could push to.
	pubsub *gcptest.PubSub
}

// bucket is the bucket gcp_provision makes for a catalog.
func (c cloudBackend) bucket(catalogID string) string {
	s := c.deps.Settings
	return strings.NewReplacer("{project}", s.Project, "{catalog}", catalogID).Replace(s.BucketTemplate)
}

// objects lists a bucket's object names, through the JSON API.
func (c cloudBackend) objects(t *testing.T, bucket string) []string {
	t.Helper()
	var names []string
	require.NoError(t, c.storage.Objects.List(bucket).Pages(context.Background(), func(o *storagev1.Objects) error {
		for _, it := range o.Items {
			names = append(names, it.Name)
		}
		return nil
	}))
	return names
}

// fakeCloud starts fake-gcs-server and pstest (project test-project,
// pushing to pushEndpoint as pushServiceAccount). It sets the process's
// environment, so its test may not be parallel: the fake storage server
// publishes its notifications through a Pub/Sub client of its own, which
// finds pstest by PUBSUB_EMULATOR_HOST, and gs:// objects are read from
// STORAGE_EMULATOR_HOST.
func fakeCloud(t *testing.T) cloudBackend {
	t.Helper()
	gcs, ps := gcptest.NewStorage(t), gcptest.NewPubSub(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", ps.Server.Addr)
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.URL)
	settings := config.Default().GCP
	settings.Project, settings.PushEndpoint, settings.PushServiceAccount = "test-project", pushEndpoint, pushServiceAccount
	opts := []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(gcs.Endpoint)}
	svc, err := storagev1.NewService(context.Background(), opts...)
	require.NoError(t, err)
	return cloudBackend{deps: gcp.Deps{Settings: settings, PubSubOptions: ps.Options, StorageOptions: opts}, storage: svc, pubsub: ps}
}

// liveCloud is the project livetest.RequireGCP names, through Application
// Default Credentials, with resource names unique to the run; every
// bucket, topic and subscription the test's catalogs may have (catalogs
// is their ids) is deleted when it ends, whatever the test did.
func liveCloud(catalogs ...string) func(t *testing.T) cloudBackend {
	return func(t *testing.T) cloudBackend {
		t.Helper()
		live := livetest.RequireGCP(t, true)
		ctx := context.Background()
		run := livetest.Name("wft")
		settings := config.Default().GCP
		settings.Project, settings.Location = live.Project, live.Location
		settings.PushEndpoint, settings.PushServiceAccount = live.PushEndpoint, live.PushServiceAccount
		settings.BucketTemplate = run + "-{catalog}"
		settings.TopicTemplate = run + "-{catalog}-storage"
		settings.SubscriptionTemplate = run + "-{catalog}-storage-push"
		settings.LifecycleDeleteAfterDays = 1 // a bucket a killed run leaves empties itself
		svc, err := storagev1.NewService(ctx, option.WithScopes(storagev1.DevstorageFullControlScope))
		require.NoError(t, err)
		client, err := pubsub.NewClient(ctx, live.Project)
		require.NoError(t, err)
		c := cloudBackend{deps: gcp.Deps{Settings: settings}, storage: svc, pubsub: &gcptest.PubSub{Client: client}}
		t.Cleanup(func() {
			defer func() { _ = client.Close() }()
			for _, id := range catalogs {
				topic := "projects/" + live.Project + "/topics/" + strings.ReplaceAll(settings.TopicTemplate, "{catalog}", id)
				sub := "projects/" + live.Project + "/subscriptions/" + strings.ReplaceAll(settings.SubscriptionTemplate, "{catalog}", id)
				livetest.DeleteGCP(t, c.storage, client, c.bucket(id), topic, sub, sub+"-relay")
			}
		})
		return c
	}
}
