package gcsreporter_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
	storagev1 "google.golang.org/api/storage/v1"

	"github.com/wfhq/wf/internal/livetest"
	"github.com/wfhq/wf/reporters/gcsreporter"
)

// liveBackend writes to a bucket of its own in the project
// livetest.RequireGCP names (make test-live; Application Default
// Credentials), created for the test and deleted, with its objects, when
// it ends; objects are read back through the JSON API. Without a live
// project the subtest is skipped, saying what is missing.
func liveBackend(t *testing.T) backend {
	t.Helper()
	live := livetest.RequireGCP(t, false)
	ctx := context.Background()
	svc, err := storagev1.NewService(ctx, option.WithScopes(storagev1.DevstorageFullControlScope))
	require.NoError(t, err)
	bucket := livetest.Name("wft-reports")
	_, err = svc.Buckets.Insert(live.Project, &storagev1.Bucket{Name: bucket, Location: live.Location,
		// A bucket a killed run leaves empties itself.
		Lifecycle: &storagev1.BucketLifecycle{Rule: []*storagev1.BucketLifecycleRule{{
			Action: &storagev1.BucketLifecycleRuleAction{Type: "Delete"}, Condition: &storagev1.BucketLifecycleRuleCondition{Age: new(int64(1))}}}},
	}).Context(ctx).Do()
	require.NoError(t, err, "creating live bucket %s", bucket)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		err := svc.Objects.List(bucket).Versions(true).Pages(ctx, func(o *storagev1.Objects) error {
			for _, it := range o.Items {
				if err := svc.Objects.Delete(bucket, it.Name).Generation(it.Generation).Context(ctx).Do(); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			err = svc.Buckets.Delete(bucket).Context(ctx).Do()
		}
		if err != nil {
			t.Errorf("live cleanup: error deleting bucket %s and its objects: %v", bucket, err)
		}
	})
	return backend{
		cfg: gcsreporter.Config{BucketURL: "gs://" + bucket + "/reports/v1", TempDir: t.TempDir()},
		read: func(t *testing.T, reportURL string) []byte {
			t.Helper()
			res, err := svc.Objects.Get(bucket, objectName(t, reportURL, bucket)).Download()
			require.NoError(t, err, "object %s", reportURL)
			defer func() { _ = res.Body.Close() }()
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			return b
		},
	}
}
