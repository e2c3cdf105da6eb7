package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/config"
)

// migrateCommand is `wf migrate`: apply or inspect the database migrations.
// Without a database URL both subcommands use the local PostgreSQL in the
// data folder.
func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "apply or inspect the database migrations",
		Subcommands: []*cli.Command{
			{
				Name:   "up",
				Usage:  "apply every pending migration (safe to run from many instances at once)",
				Action: databaseAction(accessAny, migrateUp),
			},
			{
				Name:   "status",
				Usage:  "print the applied version, the latest version and the pending migrations",
				Action: databaseAction(accessAny, migrateStatus),
			},
		},
	}
}

// databaseAction wraps a command that needs the database: it checks that no
// arguments are given, loads the configuration, opens the database as access
// says and closes it afterwards. Failures exit 1 with a one-line message.
func databaseAction(access dbAccess, run func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := noArguments(c, cmp.Or(c.Command.HelpName, c.Command.Name)); err != nil {
			return err
		}
		return databaseActionArgs(access, run)(c)
	}
}

// databaseActionArgs is databaseAction for commands that check their own arguments.
func databaseActionArgs(access dbAccess, run func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		cfg, err := loadConfig(c)
		if err != nil {
			return err
		}
		pool, cleanup, err := openDatabase(c.Context, cfg, newLogger(cfg, c.App.ErrWriter), access)
		if err != nil {
			return cli.Exit(err.Error(), ExitFailure)
		}
		defer cleanup()
		return run(c, cfg, pool)
	}
}

// migrateUp applies pending migrations and says where the database ended.
func migrateUp(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	before, err := migrationStatus(c.Context, pool)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	after, err := migrateDatabase(c.Context, cfg, pool)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	if after.Current > before.Current {
		_, err = fmt.Fprintf(c.App.Writer, "migrated to version %d\n", after.Current)
	} else {
		_, err = fmt.Fprintf(c.App.Writer, "already at version %d\n", after.Current)
	}
	if err != nil || cfg.Catalog.DatabaseURL == "" {
		return outputError(err)
	}
	// migrateDatabase migrated the catalog's database too: say where it is.
	cat, err := catalogStatus(c.Context, cfg)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	_, err = fmt.Fprintf(c.App.Writer, "catalog database (catalog.database_url) at version %d\n", cat.Current)
	return outputError(err)
}

// migrateStatus prints the applied and latest versions and the pending
// migrations; it exits 0 whether or not some are pending.
func migrateStatus(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	st, err := migrationStatus(c.Context, pool)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	if err := printMigrationStatus(c.App.Writer, st.Current, st.Latest, st.Pending); err != nil || cfg.Catalog.DatabaseURL == "" {
		return outputError(err)
	}
	cat, err := catalogStatus(c.Context, cfg)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	if _, err := io.WriteString(c.App.Writer, "catalog database (catalog.database_url):\n"); err != nil {
		return outputError(err)
	}
	return outputError(printMigrationStatus(c.App.Writer, cat.Current, cat.Latest, cat.Pending))
}

// printMigrationStatus writes a migration status.
func printMigrationStatus(w io.Writer, current, latest int32, pending []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "current version: %d\n", current)
	fmt.Fprintf(&b, "latest version:  %d\n", latest)
	if len(pending) == 0 {
		b.WriteString("pending:         none\n")
	} else {
		fmt.Fprintf(&b, "pending:         %d\n", len(pending))
		for _, name := range pending {
			fmt.Fprintf(&b, "  %s\n", name)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
