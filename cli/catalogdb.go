package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/dbmigrate"
)

// queuePart is the part of the migrations the queue's database gets: every
// statement, or the queue's only when catalog.database_url names a
// database of the catalog's own.
func queuePart(cfg *config.Config) dbmigrate.Part {
	if cfg.Catalog.DatabaseURL != "" {
		return dbmigrate.PartQueue
	}
	return dbmigrate.PartAll
}

// migrateCatalog applies the catalog's sections of the pending migrations
// to the database of catalog.database_url and returns its status before and
// after. It connects straight there (the migrator's lock is a session's).
func migrateCatalog(ctx context.Context, cfg *config.Config) (before, after dbmigrate.Status, err error) {
	conn, err := connectCatalog(ctx, cfg)
	if err != nil {
		return before, after, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if before, err = dbmigrate.CurrentStatus(ctx, conn); err != nil {
		return before, after, fmt.Errorf("catalog.database_url: %w", err)
	}
	if after, err = dbmigrate.UpPart(ctx, conn, dbmigrate.PartCatalog); err != nil {
		return before, after, fmt.Errorf("error migrating the catalog's database (catalog.database_url): %w", err)
	}
	return before, after, nil
}

// catalogStatus reports where the catalog's database stands.
func catalogStatus(ctx context.Context, cfg *config.Config) (dbmigrate.Status, error) {
	conn, err := connectCatalog(ctx, cfg)
	if err != nil {
		return dbmigrate.Status{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	st, err := dbmigrate.CurrentStatus(ctx, conn)
	if err != nil {
		return st, fmt.Errorf("catalog.database_url: %w", err)
	}
	return st, nil
}

// connectCatalog opens one connection to catalog.database_url.
func connectCatalog(ctx context.Context, cfg *config.Config) (*pgx.Conn, error) {
	return connectSetting(ctx, "catalog.database_url", cfg.Catalog.DatabaseURL)
}

// openCatalogPool opens a pool on catalog.database_url, or returns nil (and
// a cleanup that does nothing) when the catalog shares the queue's
// database. Unless access is accessAny the catalog's database must be up to
// date (wf migrate up applies its migrations).
func openCatalogPool(ctx context.Context, cfg *config.Config, access dbAccess) (*pgxpool.Pool, func(), error) {
	if cfg.Catalog.DatabaseURL == "" {
		return nil, func() {}, nil
	}
	pool, err := connectPool(ctx, cfg.Catalog.DatabaseURL, false)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog.database_url: %w", err)
	}
	if access != accessAny {
		st, err := catalogStatus(ctx, cfg)
		if err == nil && !st.UpToDate() {
			err = fmt.Errorf("the catalog's database at %s is at wf schema version %d, this wf needs %d; run `wf migrate up`",
				databaseWhere(pool), st.Current, st.Latest)
		}
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
	}
	return pool, pool.Close, nil
}

// withCatalog returns the queue's store st with the catalog's store on
// catalog.database_url when it is set (store.WithCatalog), and a cleanup
// that closes the catalog's pool.
func withCatalog(ctx context.Context, cfg *config.Config, st *store.Store) (*store.Store, func(), error) {
	pool, cleanup, err := openCatalogPool(ctx, cfg, accessSchema)
	if err != nil || pool == nil {
		return st, cleanup, err
	}
	return st.WithCatalog(store.New(pool).WithChannels(st.Channels())), cleanup, nil
}

// logCatalogApart says, once at start, that the catalog is in a database of
// its own.
func logCatalogApart(log *slog.Logger, pool *pgxpool.Pool) {
	if pool != nil {
		log.Info("the catalog's data lives in a database of its own (catalog.database_url)", "database", databaseWhere(pool))
	}
}
