package dbmigrate_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfhq/wf/internal/dbmigrate"
	"github.com/wfhq/wf/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestUpFromEmptyAndIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, dbtest.NewEmptyDatabase(t))

	st, err := dbmigrate.CurrentStatus(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, int32(0), st.Current)
	require.False(t, st.UpToDate())
	require.NotEmpty(t, st.Pending)

	st, err = dbmigrate.Up(ctx, conn)
	require.NoError(t, err)
	require.True(t, st.UpToDate())
	require.Empty(t, st.Pending)

	again, err := dbmigrate.Up(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, st.Current, again.Current)

	for _, table := range []string{"tasks.tasks", "tasks.events", "tasks.task_dedup", "tasks.event_dedup", "catalog.catalogs", "catalog.collections"} {
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok))
		require.True(t, ok, table)
	}
	var parts int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'tasks.tasks'::regclass`).Scan(&parts))
	require.GreaterOrEqual(t, parts, 3)
}

// TestConcurrentStartByTwoProcesses runs `wf migrate up` twice at once, as two
// instances starting together would, and checks both succeed with one schema.
func TestConcurrentStartByTwoProcesses(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyDatabase(t)
	bin := filepath.Join(t.TempDir(), "migrate-helper")
	build := exec.Command("go", "build", "-o", bin, "./testdata/migratehelper")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	outs := make([][]byte, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = exec.CommandContext(ctx, bin, url).CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range errs {
		require.NoError(t, errs[i], string(outs[i]))
	}
	st, err := dbmigrate.CurrentStatus(ctx, connect(t, url))
	require.NoError(t, err)
	require.True(t, st.UpToDate())
}

// TestPartsApartAndTogether: every embedded migration says which database
// each statement is for; the queue's part on one empty database and the
// catalog's on another give each its own schema only, both at the latest
// version, and the two parts together are each file as written.
func TestPartsApartAndTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	queue, catalog := connect(t, dbtest.NewEmptyDatabase(t)), connect(t, dbtest.NewEmptyDatabase(t))
	qs, err := dbmigrate.UpPart(ctx, queue, dbmigrate.PartQueue)
	require.NoError(t, err)
	cs, err := dbmigrate.UpPart(ctx, catalog, dbmigrate.PartCatalog)
	require.NoError(t, err)
	require.True(t, qs.UpToDate())
	require.True(t, cs.UpToDate())
	require.Equal(t, qs.Current, cs.Current, "one numbering for both databases")
	has := func(conn *pgx.Conn, table string) bool {
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok))
		return ok
	}
	for _, table := range []string{"tasks.tasks", "tasks.events", "tasks.relayed_events", "tasks.pauses"} {
		require.True(t, has(queue, table), table)
		require.False(t, has(catalog, table), table)
	}
	for _, table := range []string{"catalog.catalogs", "catalog.assets", "catalog.owned_tables", "catalog.outbox", "catalog.search_indexes"} {
		require.True(t, has(catalog, table), table)
		require.False(t, has(queue, table), table)
	}
	// Again: nothing pending on either.
	again, err := dbmigrate.UpPart(ctx, catalog, dbmigrate.PartCatalog)
	require.NoError(t, err)
	require.Equal(t, cs.Current, again.Current)
}
