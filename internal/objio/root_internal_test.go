package objio

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// rootBundle is a root holding sub/ok.txt, and a folder outside it holding
// secret.txt and ok.txt, for the tests of links met at open time.
type rootBundle struct {
	root, outside string
}

func setupRoot(t *testing.T) rootBundle {
	t.Helper()
	b := rootBundle{root: filepath.Join(t.TempDir(), "root"), outside: t.TempDir()}
	require.NoError(t, os.MkdirAll(filepath.Join(b.root, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(b.root, "sub", "ok.txt"), []byte("ok"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(b.outside, "secret.txt"), []byte("secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(b.outside, "ok.txt"), []byte("outside"), 0o600))
	return b
}

// requireOutsideUntouched checks that the folder outside the root holds
// only what setupRoot put there.
func (b rootBundle) requireOutsideUntouched(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(b.outside)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"ok.txt", "secret.txt"}, names, "nothing was written outside the root")
	got, err := os.ReadFile(filepath.Join(b.outside, "ok.txt"))
	require.NoError(t, err)
	require.Equal(t, "outside", string(got))
}

// TestOpenThroughRootRefusesLinks skips the check of localPath: it hands
// openLocal and createLocal locations whose path inside the root goes
// through links out of it, as a link swapped in after the check would, and
// shows that the os.Root refuses them with ErrForbidden.
func TestOpenThroughRootRefusesLinks(t *testing.T) {
	t.Parallel()
	b := setupRoot(t)
	for name, target := range map[string]string{
		"dir":      b.outside,                                           // an absolute link to a folder outside
		"reldir":   filepath.Join("..", "..", filepath.Base(b.outside)), // a relative one
		"file.txt": filepath.Join(b.outside, "secret.txt"),              // a link to a file outside
		"up":       "..",                                                // the root's parent
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(b.root, name)))
	}
	o := New(Config{LocalRoots: []string{b.root}, RootsHint: "set files.local_roots"})
	at := func(rel string) location {
		return location{raw: rel, path: filepath.Join(b.root, rel), root: b.root, rel: rel}
	}

	for _, rel := range []string{"dir/secret.txt", "reldir/secret.txt", "file.txt", "up/" + filepath.Base(b.root) + "/sub/ok.txt"} {
		_, err := o.openLocal(at(rel))
		require.ErrorIs(t, err, ErrForbidden, rel)
		require.ErrorContains(t, err, "is outside the allowed folders ("+b.root+"); set files.local_roots", rel)
	}
	for _, rel := range []string{"dir/new.txt", "dir/deeper/new.txt", "reldir/new.txt", "up/new.txt"} {
		_, err := o.createLocal(at(rel))
		require.ErrorIs(t, err, ErrForbidden, rel)
	}
	b.requireOutsideUntouched(t)
	_, err := os.Stat(filepath.Join(filepath.Dir(b.root), "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing was written in the root's parent")

	// Replacing a link in the root with a file is allowed: the link itself
	// is replaced, its target is left alone.
	w, err := o.createLocal(at("file.txt"))
	require.NoError(t, err)
	_, err = w.Write([]byte("replaced"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	fi, err := os.Lstat(filepath.Join(b.root, "file.txt"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
	b.requireOutsideUntouched(t)
}

// TestLinkSwappedAfterCheck swaps a folder of the path for a link out of
// the root after localPath has checked the path and before it is opened:
// the race the os.Root closes.
func TestLinkSwappedAfterCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupRoot(t)
	o := New(Config{LocalRoots: []string{b.root}})
	sub := filepath.Join(b.root, "sub")

	// Unswapped, the file inside is read.
	r, err := o.Open(ctx, "sub/ok.txt")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, "ok", string(got))

	swapped := 0
	o.checked = func(l location) {
		require.True(t, within(sub, l.path), "the check saw the real folder: %s", l.path)
		require.NoError(t, os.Rename(sub, sub+".old"))
		require.NoError(t, os.Symlink(b.outside, sub))
		swapped++
	}
	unswap := func() {
		require.NoError(t, os.Remove(sub))
		require.NoError(t, os.Rename(sub+".old", sub))
	}

	_, err = o.Open(ctx, "sub/ok.txt")
	require.ErrorIs(t, err, ErrForbidden)
	require.ErrorContains(t, err, "is outside the allowed folders")
	unswap()
	_, err = o.Create(ctx, "sub/new.txt", "text/plain")
	require.ErrorIs(t, err, ErrForbidden)
	unswap()
	_, err = o.Create(ctx, "file://"+filepath.ToSlash(filepath.Join(sub, "deeper", "new.txt")), "text/plain")
	require.ErrorIs(t, err, ErrForbidden)
	unswap()
	require.Equal(t, 3, swapped)
	b.requireOutsideUntouched(t)
}

// TestCreateInRoot writes a file straight in the root, and refuses to
// write the root itself.
func TestCreateInRoot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "missing", "root")
	o := New(Config{LocalRoots: []string{root}})

	w, err := o.Create(ctx, "top.txt", "text/plain")
	require.NoError(t, err, "a missing root is created")
	_, err = w.Write([]byte("top"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	got, err := os.ReadFile(filepath.Join(root, "top.txt"))
	require.NoError(t, err)
	require.Equal(t, "top", string(got))

	_, err = o.Create(ctx, root, "text/plain")
	require.ErrorIs(t, err, ErrInvalid)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
}
