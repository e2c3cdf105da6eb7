package localpg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestCanTraverse(t *testing.T) {
	t.Parallel()
	user := &syscall.Credential{Uid: 101, Gid: 102}
	for _, tc := range []struct {
		mode     os.FileMode
		uid, gid uint32
		want     bool
	}{
		{0o755, 0, 0, true},
		{0o750, 0, 0, false},
		{0o750, 0, 102, true},    // the user's group may enter
		{0o700, 101, 0, true},    // the user owns it
		{0o070, 101, 102, false}, // the owner's bits decide for the owner
		{0o711, 0, 0, true},      // traversal without reading
	} {
		if got := canTraverse(tc.mode, tc.uid, tc.gid, user); got != tc.want {
			t.Errorf("canTraverse(%04o, uid %d, gid %d) = %t, want %t", tc.mode, tc.uid, tc.gid, got, tc.want)
		}
	}
}

// skipUnlessRootWithServer skips a test that starts the server as another
// user: only root does, and only where PostgreSQL's binaries are found.
func skipUnlessRootWithServer(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("only root starts the server as another user")
	}
	if _, err := FindBinDir(); err != nil {
		t.Skip(err)
	}
}

// TestUnreachableDataFolder: as root, a data folder below a folder the
// server's user cannot enter is refused up front, naming that folder.
func TestUnreachableDataFolder(t *testing.T) {
	t.Parallel()
	skipUnlessRootWithServer(t)
	base, err := os.MkdirTemp("", "wf-localpg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil { // owned by root
		t.Fatal(err)
	}
	c := &Cluster{cfg: Config{DataDir: filepath.Join(private, "data", "pg")}}
	if c.runAs, err = unprivilegedUser(); err != nil {
		t.Skip(err)
	}
	if err := os.MkdirAll(filepath.Join(private, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = c.checkReachable(c.cfg.DataDir)
	if err == nil || !strings.Contains(err.Error(), "cannot enter "+private+" (mode 0700)") {
		t.Fatalf("checkReachable under a private folder: %v", err)
	}
	if err := os.Chmod(private, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := c.checkReachable(c.cfg.DataDir); err != nil {
		t.Fatalf("checkReachable once the folders may be entered: %v", err)
	}
}

// TestStartOutsideUnreachableFolder: as root, a data folder below a folder
// the server's user cannot enter (a clone in /root) gets a cluster of its
// own in the fallback root, one per data folder path, reused on restart.
func TestStartOutsideUnreachableFolder(t *testing.T) {
	t.Parallel()
	skipUnlessRootWithServer(t)
	ctx := context.Background()
	private := t.TempDir() // mode 0700, owned by root
	fallback, err := os.MkdirTemp("", "wf-localpg-fallback-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(fallback) })
	require.NoError(t, os.Chmod(fallback, 0o755))

	dataDir := filepath.Join(private, "clone", ".wf", "pg")
	placed, moved, err := Place(dataDir, fallback)
	require.NoError(t, err)
	require.True(t, moved)
	require.Equal(t, fallback, filepath.Dir(placed))
	other, _, err := Place(filepath.Join(private, "other-clone", ".wf", "pg"), fallback)
	require.NoError(t, err)
	require.NotEqual(t, placed, other, "two checkouts share a cluster")

	c, err := Start(ctx, Config{DataDir: dataDir, FallbackRoot: fallback})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	require.True(t, c.Moved())
	require.Equal(t, placed, c.DataDir())
	origin, err := os.ReadFile(filepath.Join(placed, originFile))
	require.NoError(t, err)
	require.Equal(t, dataDir+"\n", string(origin))
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE kept (x int)")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	require.NoError(t, c.Stop(ctx))

	// A restart finds the same cluster, data included.
	c2, err := Start(ctx, Config{DataDir: dataDir, FallbackRoot: fallback})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Stop(context.Background()) })
	require.Equal(t, placed, c2.DataDir())
	conn, err = pgx.Connect(ctx, c2.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT * FROM kept")
	require.NoError(t, err)

	// A reachable data folder stays where it is.
	open, err := os.MkdirTemp("", "wf-localpg-open-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(open) })
	require.NoError(t, os.Chmod(open, 0o755))
	placed, moved, err = Place(filepath.Join(open, "pg"), fallback)
	require.NoError(t, err)
	require.False(t, moved)
	require.Equal(t, filepath.Join(open, "pg"), placed)
}
