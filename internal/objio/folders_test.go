package objio_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/objio"
)

// TestFoldersLocal: Folders lists the folders (not the files) of a local
// folder, RemoveAll removes one with what it holds and counts its files,
// a missing folder is empty and nothing to remove, and a tenant's opener
// reaches only its own folder.
func TestFoldersLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	for _, f := range []string{"t1/a/1.mvt", "t1/a/x/2.mvt", "t1/b/3.mvt", "t1/file", "t2/a/4.mvt"} {
		writeFile(t, filepath.Join(root, f), "x")
	}
	o := objio.New(objio.Config{LocalRoots: []string{root}})
	names, err := o.Folders(ctx, "file://"+root+"/t1")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, names)
	names, err = o.Folders(ctx, filepath.Join(root, "missing"))
	require.NoError(t, err)
	require.Empty(t, names)

	n, err := o.RemoveAll(ctx, "file://"+root+"/t1/a")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.NoDirExists(t, filepath.Join(root, "t1/a"))
	require.FileExists(t, filepath.Join(root, "t1/b/3.mvt"))
	n, err = o.RemoveAll(ctx, "file://"+root+"/t1/a")
	require.NoError(t, err, "already gone")
	require.Zero(t, n)

	_, err = o.RemoveAll(ctx, root)
	require.ErrorIs(t, err, objio.ErrInvalid, "never a root itself")
	_, err = o.RemoveAll(ctx, "https://example.com/x")
	require.ErrorIs(t, err, objio.ErrInvalid)
	_, err = o.RemoveAll(ctx, root+"/t1/../t2")
	require.ErrorIs(t, err, objio.ErrInvalid, "no climbing")

	t1, err := o.Tenant("t1")
	require.NoError(t, err)
	_, err = t1.RemoveAll(ctx, filepath.Join(root, "t2", "a"))
	require.ErrorIs(t, err, objio.ErrForbidden, "another tenant's folder")
	require.FileExists(t, filepath.Join(root, "t2/a/4.mvt"))
	_, err = t1.Folders(ctx, filepath.Join(root, "t2"))
	require.ErrorIs(t, err, objio.ErrForbidden)
}

// TestFoldersGCS: on Cloud Storage a folder is a key prefix: Folders lists
// the next key segments, RemoveAll deletes every object under the prefix
// and no other (not one whose key merely starts with the same letters).
func TestFoldersGCS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := gcptest.NewFakeGCS(t, "b")
	for _, k := range []string{"wf/s1/a/v1/0.mvt", "wf/s1/a/v1/1/2.mvt", "wf/s1/a/v10/0.mvt", "wf/s1/b/0.mvt", "wf/s2/c/0.mvt", "wf/top.mvt"} {
		srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "b", Name: k}, Content: []byte("x")})
	}
	o := objio.New(objio.Config{GCSEndpoint: srv.URL() + "/storage/v1/"})
	names, err := o.Folders(ctx, "gs://b/wf")
	require.NoError(t, err)
	require.Equal(t, []string{"s1", "s2"}, names)
	names, err = o.Folders(ctx, "gs://b/wf/s1/a/")
	require.NoError(t, err)
	require.Equal(t, []string{"v1", "v10"}, names)
	names, err = o.Folders(ctx, "gs://b")
	require.NoError(t, err)
	require.Equal(t, []string{"wf"}, names)

	n, err := o.RemoveAll(ctx, "gs://b/wf/s1/a/v1")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	objs, err := srv.ListObjectsWithOptionsPaginated("b", fakestorage.ListOptions{Prefix: "wf/"})
	require.NoError(t, err)
	var left []string
	for _, obj := range objs.Objects {
		left = append(left, obj.Name)
	}
	require.ElementsMatch(t, []string{"wf/s1/a/v10/0.mvt", "wf/s1/b/0.mvt", "wf/s2/c/0.mvt", "wf/top.mvt"}, left)
	_, err = o.RemoveAll(ctx, "gs://b")
	require.ErrorIs(t, err, objio.ErrInvalid, "never a whole bucket")
}
