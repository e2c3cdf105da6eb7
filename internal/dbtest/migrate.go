package dbtest

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/wfhq/wf/internal/dbmigrate"
	"github.com/wfhq/wf/migrations"
)

// MigratedBefore creates an empty database (as NewEmptyDatabase), connects
// to it and migrates it to the version before the migration whose file name
// ends with suffix (e.g. "_workflow_waits.sql"), found by name so that
// renumbering a migration at a merge leaves its test right. It returns the
// database's URL, the connection (closed when the test ends), the migrator
// with wf's migrations loaded, and the sequence number of that migration.
func MigratedBefore(t testing.TB, ctx context.Context, suffix string) (url string, conn *pgx.Conn, m *migrate.Migrator, seq int32) {
	t.Helper()
	url = NewEmptyDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	m, err = migrate.NewMigrator(ctx, conn, dbmigrate.VersionTable)
	if err != nil {
		t.Fatalf("migrator: %v", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		t.Fatalf("load migrations: %v", err)
	}
	for _, mig := range m.Migrations {
		if strings.HasSuffix(mig.Name, suffix) {
			seq = mig.Sequence
		}
	}
	if seq == 0 {
		t.Fatalf("no migration *%s", suffix)
	}
	if err := m.MigrateTo(ctx, seq-1); err != nil {
		t.Fatalf("migrate to %d: %v", seq-1, err)
	}
	return url, conn, m, seq
}
