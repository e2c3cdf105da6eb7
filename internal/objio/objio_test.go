package objio_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/egress"
	"github.com/wfhq/wf/internal/gcptest"
	"github.com/wfhq/wf/internal/objio"
)

// writeFile writes data to the file at path, making its folder first.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
}

// readLoc opens loc through o and returns all it holds.
func readLoc(t *testing.T, o *objio.Opener, loc string) string {
	t.Helper()
	r, err := o.Open(t.Context(), loc)
	require.NoError(t, err, loc)
	b, err := io.ReadAll(r)
	require.NoError(t, err, loc)
	require.NoError(t, r.Close())
	return string(b)
}

// writeLoc writes data, as text/plain, to loc through o.
func writeLoc(t *testing.T, o *objio.Opener, loc, data string) {
	t.Helper()
	w, err := o.Create(t.Context(), loc, "text/plain")
	require.NoError(t, err, loc)
	_, err = w.Write([]byte(data))
	require.NoError(t, err, loc)
	require.NoError(t, w.Close())
}

func TestLocationsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	o := objio.New(objio.Config{LocalRoots: []string{root}})
	for loc, want := range map[string]error{
		"":                          objio.ErrInvalid,
		"ftp://host/x":              objio.ErrInvalid,
		"gs://bucket":               objio.ErrInvalid,
		"gs://bucket/dir/":          objio.ErrInvalid,
		"file://relative/x":         objio.ErrInvalid,
		"/etc/passwd":               objio.ErrForbidden,
		"../outside":                objio.ErrForbidden,
		"file:///etc/passwd":        objio.ErrForbidden,
		"inside/missing.geojson":    objio.ErrNotFound,
		"http://":                   objio.ErrInvalid,
		filepath.Join(root, "none"): objio.ErrNotFound,
	} {
		_, err := o.Open(ctx, loc)
		require.ErrorIs(t, err, want, loc)
	}
	_, err := o.Create(ctx, "https://example.com/x", "text/plain")
	require.ErrorIs(t, err, objio.ErrInvalid)
	_, err = o.Create(ctx, "/tmp/elsewhere", "text/plain")
	require.ErrorIs(t, err, objio.ErrForbidden)
}

// TestLinksCannotEscape checks that links inside a root are followed
// before the check, for reads and writes, local paths and file:// URLs.
func TestLinksCannotEscape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, outside := t.TempDir(), t.TempDir()
	root := filepath.Join(base, "root")
	secret := filepath.Join(outside, "secret.txt")
	writeFile(t, secret, "secret")
	writeFile(t, filepath.Join(root, "sub", "ok.txt"), "ok")
	for name, target := range map[string]string{
		"file.txt": secret,                            // a link to a file outside
		"dir":      outside,                           // a link to a folder outside
		"dangling": filepath.Join(outside, "new.txt"), // a link to a file not yet there
		"relative": filepath.Join("..", "..", filepath.Base(outside)),
		"inside":   filepath.Join(root, "sub"),  // a link that stays inside
		"loop":     filepath.Join(root, "loop"), // a link to itself
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(root, name)))
	}
	// The root itself reached through a link is still the root.
	linkedRoot := filepath.Join(base, "linked-root")
	require.NoError(t, os.Symlink(root, linkedRoot))
	o := objio.New(objio.Config{LocalRoots: []string{linkedRoot}, RootsHint: "set files.local_roots"})

	for _, loc := range []string{
		"file.txt", "dir/secret.txt", "relative/secret.txt", "dangling",
		filepath.Join(root, "file.txt"), "file://" + filepath.ToSlash(filepath.Join(linkedRoot, "dir", "secret.txt")),
	} {
		_, err := o.Open(ctx, loc)
		require.ErrorIs(t, err, objio.ErrForbidden, loc)
		require.ErrorContains(t, err, "is outside the allowed folders ("+linkedRoot+"); set files.local_roots", loc)
		require.ErrorContains(t, err, "a link to "+outside, loc)
		_, err = o.Create(ctx, loc, "text/plain")
		require.ErrorIs(t, err, objio.ErrForbidden, loc)
	}
	_, err := o.Open(ctx, "loop")
	require.Error(t, err)
	_, err = os.Stat(filepath.Join(outside, "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing was written through the dangling link")

	for _, loc := range []string{"sub/ok.txt", "inside/ok.txt", filepath.Join(root, "inside", "ok.txt"), "file://" + filepath.ToSlash(filepath.Join(linkedRoot, "sub", "ok.txt"))} {
		require.Equal(t, "ok", readLoc(t, o, loc), loc)
	}
	// A new file in a new folder inside the root can be written.
	writeLoc(t, o, "inside/new/out.txt", "out")
	b, err := os.ReadFile(filepath.Join(root, "sub", "new", "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "out", string(b))
}

func TestWriteAndRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	gcs := gcptest.NewFakeGCS(t, "b")
	o := objio.New(objio.Config{LocalRoots: []string{root}, GCSEndpoint: gcs.URL() + "/storage/v1/"})

	for _, loc := range []string{"sub/plain.txt", "file://" + filepath.ToSlash(filepath.Join(root, "deep", "f.txt")), "gs://b/k/obj.txt"} {
		// An aborted write leaves nothing.
		w, err := o.Create(ctx, loc, "text/plain")
		require.NoError(t, err, loc)
		_, err = w.Write([]byte("partial"))
		require.NoError(t, err)
		w.Abort()
		_, err = o.Open(ctx, loc)
		require.ErrorIs(t, err, objio.ErrNotFound, loc)

		w, err = o.Create(ctx, loc, "text/plain")
		require.NoError(t, err)
		_, err = w.Write([]byte("hello"))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		w.Abort() // after Close: nothing happens
		require.Equal(t, "hello", readLoc(t, o, loc), loc)
	}
	entries, err := os.ReadDir(filepath.Join(root, "sub"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left next to the object")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte("body"))
		case "/secret":
			w.WriteHeader(http.StatusForbidden)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	// By default a loopback source is refused, as the cloud metadata
	// address is: with the same error as a closed port.
	_, err = o.Open(ctx, srv.URL+"/ok")
	require.ErrorIs(t, err, egress.ErrUnreachable)
	_, err = o.Open(ctx, "http://169.254.169.254/latest/meta-data/")
	require.ErrorIs(t, err, egress.ErrUnreachable)
	// Allow-listed (outbound.allow), it is read.
	loopback, err := egress.NewPolicy([]string{"127.0.0.0/8"})
	require.NoError(t, err)
	o = objio.New(objio.Config{LocalRoots: []string{root}, GCSEndpoint: gcs.URL() + "/storage/v1/", HTTPClient: loopback.Client(0)})
	r, err := o.Open(ctx, srv.URL+"/ok")
	require.NoError(t, err)
	b, _ := io.ReadAll(r)
	require.NoError(t, r.Close())
	require.Equal(t, "body", string(b))
	_, err = o.Open(ctx, srv.URL+"/secret")
	require.ErrorIs(t, err, objio.ErrForbidden)
	_, err = o.Open(ctx, srv.URL+"/broken")
	require.ErrorContains(t, err, "500")
	require.NotErrorIs(t, err, objio.ErrInvalid, "a server error may be retried")
}
