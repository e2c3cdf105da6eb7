// Package dbmigrate applies wf's embedded migrations with jackc/tern. Tern
// holds a PostgreSQL advisory lock while it migrates, so any number of wf
// instances may start at once: one migrates, the others wait and find the
// schema current.
package dbmigrate

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/wfhq/wf/migrations"
)

// VersionTable records the applied migration version.
const VersionTable = "public.wf_schema_version"

// Status is where a database stands against the embedded migrations.
type Status struct {
	Current int32    // applied version (0 on an empty database)
	Latest  int32    // newest embedded version
	Pending []string // names of migrations not yet applied
}

// UpToDate reports whether every embedded migration has been applied.
func (s Status) UpToDate() bool { return s.Current >= s.Latest }

func newMigrator(ctx context.Context, conn *pgx.Conn, fsys fs.FS) (*migrate.Migrator, error) {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return nil, fmt.Errorf("error preparing migrations: %w", err)
	}
	if err := m.LoadMigrations(fsys); err != nil {
		return nil, fmt.Errorf("error loading migrations: %w", err)
	}
	return m, nil
}

// Up applies every pending migration and returns the resulting status.
func Up(ctx context.Context, conn *pgx.Conn) (Status, error) {
	return up(ctx, conn, migrations.FS)
}

// UpPart applies every pending migration's sections for one database (see
// Part) and returns the resulting status. Each database keeps its own
// version in VersionTable; PartAll is Up.
func UpPart(ctx context.Context, conn *pgx.Conn, part Part) (Status, error) {
	fsys, err := partFS(migrations.FS, part)
	if err != nil {
		return Status{}, err
	}
	return up(ctx, conn, fsys)
}

func up(ctx context.Context, conn *pgx.Conn, fsys fs.FS) (Status, error) {
	m, err := newMigrator(ctx, conn, fsys)
	if err != nil {
		return Status{}, err
	}
	if err := m.Migrate(ctx); err != nil {
		return Status{}, fmt.Errorf("error applying migrations: %w", err)
	}
	return status(ctx, conn, m)
}

// CurrentStatus reports the applied and the newest version without changing anything.
func CurrentStatus(ctx context.Context, conn *pgx.Conn) (Status, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", VersionTable).Scan(&exists); err != nil {
		return Status{}, fmt.Errorf("error reading migration status: %w", err)
	}
	names, err := migrate.FindMigrations(migrations.FS)
	if err != nil {
		return Status{}, fmt.Errorf("error listing migrations: %w", err)
	}
	st := Status{Latest: int32(len(names))}
	if exists {
		if err := conn.QueryRow(ctx, "SELECT version FROM "+VersionTable).Scan(&st.Current); err != nil {
			return Status{}, fmt.Errorf("error reading migration version: %w", err)
		}
	}
	for i := int(st.Current); i < len(names); i++ {
		st.Pending = append(st.Pending, names[i])
	}
	return st, nil
}

func status(ctx context.Context, conn *pgx.Conn, m *migrate.Migrator) (Status, error) {
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("error reading migration version: %w", err)
	}
	st := Status{Current: cur, Latest: int32(len(m.Migrations))}
	for _, mig := range m.Migrations {
		if mig.Sequence > cur {
			st.Pending = append(st.Pending, mig.Name)
		}
	}
	return st, nil
}
