package objio_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/objio"
)

// TestTenantFolders checks that a tenant's opener reaches only the files
// in its own folder under each root, by any spelling of a location, and
// that its errors do not name the server's folders.
func TestTenantFolders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := t.TempDir()
	root1, root2 := filepath.Join(base, "one"), filepath.Join(base, "two")
	own := filepath.Join(root1, "s_a", "own.txt")
	theirs := filepath.Join(root1, "s_b", "theirs.txt")
	writeFile(t, own, "a's")
	writeFile(t, theirs, "b's")
	writeFile(t, filepath.Join(root2, "s_a", "second.txt"), "a's too")
	writeFile(t, filepath.Join(root1, "system", "sys.txt"), "system's")
	// A link in A's folder into B's: it leads out of A's folder.
	require.NoError(t, os.Symlink(theirs, filepath.Join(root1, "s_a", "link.txt")))
	require.NoError(t, os.Symlink(filepath.Join(root1, "s_b"), filepath.Join(root1, "s_a", "linkdir")))

	o := objio.New(objio.Config{LocalRoots: []string{root1, root2}})
	a, err := o.Tenant("s_a")
	require.NoError(t, err)

	for _, loc := range []string{"own.txt", own, "file://" + filepath.ToSlash(own), filepath.Join(root2, "s_a", "second.txt")} {
		require.NoError(t, a.Check(loc), loc)
		r, err := a.Open(ctx, loc)
		require.NoError(t, err, loc)
		_ = r.Close()
	}
	refused := map[string]error{
		theirs:                               objio.ErrForbidden,
		"file://" + filepath.ToSlash(theirs): objio.ErrForbidden,
		"link.txt":                           objio.ErrForbidden,
		"linkdir/theirs.txt":                 objio.ErrForbidden,
		filepath.Join(root1, "system", "sys.txt"): objio.ErrForbidden,
		filepath.Join(root1, "own-at-root.txt"):   objio.ErrForbidden,
		"/etc/passwd":                             objio.ErrForbidden,
	}
	climbing := []string{
		"../s_b/theirs.txt",
		"sub/../../s_b/theirs.txt",
		"%2e%2e/s_b/theirs.txt",
		"%252e%252e/s_b/theirs.txt",
		"file://" + filepath.ToSlash(filepath.Join(root1, "s_a")) + "/%2e%2e/s_b/theirs.txt",
		"file://" + filepath.ToSlash(filepath.Join(root1, "s_a")) + "/../s_b/theirs.txt",
		`..\s_b\theirs.txt`,
	}
	for loc, want := range refused {
		err := a.Check(loc)
		require.ErrorIs(t, err, want, loc)
		require.ErrorContains(t, err, "is outside the files of tenant s_a", loc)
		// The location as given, and no other folder of the server's.
		require.NotContains(t, strings.ReplaceAll(err.Error(), loc, ""), base, "the error names no server folder: %s", loc)
		_, err = a.Open(ctx, loc)
		require.ErrorIs(t, err, want, loc)
		require.NotContains(t, strings.ReplaceAll(err.Error(), loc, ""), base, loc)
		_, err = a.Create(ctx, loc, "text/plain")
		require.ErrorIs(t, err, want, loc)
	}
	for _, loc := range climbing {
		err := a.Check(loc)
		require.ErrorIs(t, err, objio.ErrInvalid, loc)
		// At run time, a location that was not checked is refused too
		// when it resolves outside (a percent-encoded name in a plain path
		// is just a file name, missing here).
		_, err = a.Open(ctx, loc)
		require.Error(t, err, loc)
		require.NotContains(t, strings.ReplaceAll(err.Error(), loc, ""), base, loc)
		if w, err := a.Create(ctx, loc, "text/plain"); err == nil {
			_, _ = w.Write([]byte("overwritten"))
			w.Abort()
		}
	}
	b, err := os.ReadFile(theirs)
	require.NoError(t, err)
	require.Equal(t, "b's", string(b), "B's file is untouched")

	// A write by a relative path lands in A's folder under the first root.
	writeLoc(t, a, "exports/out.txt", "out")
	b, err = os.ReadFile(filepath.Join(root1, "s_a", "exports", "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "out", string(b))

	// A tenant whose folder does not exist yet: reading finds nothing,
	// writing creates the folder.
	c, err := o.Tenant("s_c")
	require.NoError(t, err)
	_, err = c.Open(ctx, "x.txt")
	require.ErrorIs(t, err, objio.ErrNotFound)
	writeLoc(t, c, "x.txt", "")
	require.FileExists(t, filepath.Join(root1, "s_c", "x.txt"))

	sys, err := o.Tenant(objio.SystemTenant)
	require.NoError(t, err)
	require.Equal(t, "system's", readLoc(t, sys, "sys.txt"))

	_, err = o.Tenant(strings.Repeat("s", 63))
	require.NoError(t, err, "a schema name of 63 bytes")
	for _, bad := range []string{"", ".", "..", "a/b", "A", "s_a/../s_b", "1x", strings.Repeat("s", 64)} {
		_, err := o.Tenant(bad)
		require.ErrorIs(t, err, objio.ErrInvalid, bad)
	}
}
