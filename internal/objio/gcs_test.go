package objio_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/objio"
)

// TestGCSLargeObject writes an object of several upload chunks (a
// resumable upload), reads it back, and checks that an aborted large upload
// leaves nothing.
func TestGCSLargeObject(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := gcptest.NewFakeGCS(t, "b")
	o := objio.New(objio.Config{GCSEndpoint: srv.URL() + "/storage/v1/"})
	data := make([]byte, 20<<20+12345) // three chunks, the last one partial
	_, _ = rand.Read(data)

	w, err := o.Create(ctx, "gs://b/big/data.bin", "application/octet-stream")
	require.NoError(t, err)
	// Written in small pieces, as an export streams its rows.
	for p := data; len(p) > 0; {
		n := min(len(p), 64<<10)
		_, err := w.Write(p[:n])
		require.NoError(t, err)
		p = p[n:]
	}
	require.NoError(t, w.Close())
	obj, err := srv.GetObject("b", "big/data.bin")
	require.NoError(t, err)
	require.Equal(t, "application/octet-stream", obj.ContentType)

	r, err := o.Open(ctx, "gs://b/big/data.bin")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.True(t, bytes.Equal(data, got), "read %d bytes back, want the %d written", len(got), len(data))

	w, err = o.Create(ctx, "gs://b/big/aborted.bin", "application/octet-stream")
	require.NoError(t, err)
	_, err = w.Write(data[:17<<20]) // past two chunks: the upload has begun
	require.NoError(t, err)
	w.Abort()
	_, err = o.Open(ctx, "gs://b/big/aborted.bin")
	require.ErrorIs(t, err, objio.ErrNotFound)
}

// TestGCSErrors checks how Cloud Storage failures reach the caller: a
// missing bucket or object is ErrNotFound, a refusal ErrForbidden, and a
// transient failure of the first request is retried.
func TestGCSErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := gcptest.NewFakeGCS(t, "b")
	srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "b", Name: "flaky"}, Content: []byte("eventually")})
	target, err := url.Parse(srv.URL())
	require.NoError(t, err)
	var failures atomic.Int32
	failures.Store(2)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "/o/secret"):
			http.Error(w, `{"error":{"code":403,"message":"denied"}}`, http.StatusForbidden)
			return
		case strings.Contains(r.URL.Path, "/o/flaky") && failures.Add(-1) >= 0:
			http.Error(w, `{"error":{"code":503,"message":"try later"}}`, http.StatusServiceUnavailable)
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	o := objio.New(objio.Config{GCSEndpoint: proxy.URL + "/storage/v1/"})

	r, err := o.Open(ctx, "gs://b/flaky")
	require.NoError(t, err, "two 503 answers are retried")
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, "eventually", string(got))

	_, err = o.Open(ctx, "gs://b/missing")
	require.ErrorIs(t, err, objio.ErrNotFound)
	require.ErrorContains(t, err, "gs://b/missing")
	_, err = o.Open(ctx, "gs://b/secret")
	require.ErrorIs(t, err, objio.ErrForbidden)

	w, err := o.Create(ctx, "gs://no-such-bucket/x", "text/plain")
	require.NoError(t, err, "the upload fails when it is sent")
	_, _ = w.Write([]byte("lost"))
	err = w.Close()
	require.ErrorIs(t, err, objio.ErrNotFound)
	require.ErrorContains(t, err, "gs://no-such-bucket/x")
}
