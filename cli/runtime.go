package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfhq/wf/catalog/outbox"
	"github.com/wfhq/wf/catalog/tiles"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/maintenance"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/buildinfo"
	"github.com/wfhq/wf/internal/secretbox"
	"github.com/wfhq/wf/internal/tracing"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/runners"
	"github.com/wfhq/wf/wftype"
)

// runtime is what the commands that run tasks or serve the API (wf run,
// wf serve, wf exec) start from: the configuration, a logger, the compiled
// specs, a migrated database and the task reporters.
type runtime struct {
	cfg   *config.Config
	log   *slog.Logger
	specs *spec.Set
	pool  *pgxpool.Pool
	// catalogPool is the catalog's database (catalog.database_url); nil
	// when the catalog shares pool's.
	catalogPool *pgxpool.Pool
	// store is a store on pool that notifies on the configured channels,
	// with the catalog's store (store.WithCatalog) when catalogPool is set.
	store *store.Store
	// reporterHook builds the reporters of one task.
	reporterHook func(*wftype.Task) (reporters.Reporter, error)
	// reporters are the task reporters, whose spec set a reload changes.
	reporters *taskReporterSet
	// tracer is the OpenTelemetry tracer provider of the OTEL_* variables;
	// nil when tracing is off (internal/tracing).
	tracer trace.TracerProvider
	// secrets are the keys of secrets.keys (WF_SECRET_KEY); nil keeps
	// secrets clear.
	secrets *secretbox.Keyring
	// specSource and onReload, when set, are the engine's
	// (engine.Config.SpecSource, OnReload): wf run reloads its specs.
	specSource func() (*spec.Set, error)
	onReload   func(*spec.Set)
}

// runtimeOptions is where the commands' start-ups differ.
type runtimeOptions struct {
	// filesFolder creates the local files folder before the database is
	// opened (wf run).
	filesFolder bool
	// migrate brings the database up to date and returns an error fit to
	// return from a command; nil applies every pending migration.
	migrate func(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool) error
}

// openRuntime loads the configuration and the specs, opens and migrates the
// database and opens the task reporters. The cleanup closes the reporters,
// then the database; it is nil when err is not. Configuration and spec
// errors come back as loadConfig and loadSpecs return them, the others
// exit 1.
func openRuntime(c *cli.Context, o runtimeOptions) (*runtime, func(), error) {
	cfg, err := loadConfig(c)
	if err != nil {
		return nil, nil, err
	}
	log := newLogger(cfg, c.App.ErrWriter)
	keys, err := secretKeys(cfg)
	if err != nil {
		return nil, nil, err
	}
	specs, err := loadSpecs(c, cfg)
	if err != nil {
		return nil, nil, err
	}
	if o.filesFolder {
		if err := createFilesFolder(cfg); err != nil {
			return nil, nil, cli.Exit(err.Error(), ExitFailure)
		}
	}
	ctx := c.Context
	pool, closeDatabase, err := openDatabase(ctx, cfg, log, accessAny)
	if err != nil {
		return nil, nil, cli.Exit(err.Error(), ExitFailure)
	}
	migrate := o.migrate
	if migrate == nil {
		migrate = migrateAll
	}
	if err := migrate(ctx, cfg, pool); err != nil {
		closeDatabase()
		return nil, nil, err
	}
	catalogPool, closeCatalog, err := openCatalogPool(ctx, cfg, accessSchema)
	if err != nil {
		closeDatabase()
		return nil, nil, cli.Exit(err.Error(), ExitFailure)
	}
	logCatalogApart(log, catalogPool)
	closeDatabase = func(closeQueue func()) func() { return func() { closeCatalog(); closeQueue() } }(closeDatabase)
	st := configuredStore(cfg, pool).WithSecrets(keys)
	if catalogPool != nil {
		st = st.WithCatalog(configuredStore(cfg, catalogPool))
	}
	if err := checkSecretKeys(ctx, st, keys, log); err != nil {
		closeDatabase()
		return nil, nil, cli.Exit(err.Error(), ExitFailure)
	}
	rs, err := taskReporters(ctx, cfg, st, specs)
	if err != nil {
		closeDatabase()
		return nil, nil, cli.Exit(err.Error(), ExitFailure)
	}
	tracer, stopTracing, err := tracing.FromEnv(ctx, cfg.Name, buildinfo.Read().Version)
	if err != nil {
		closeReporters(rs.factory, log)
		closeDatabase()
		return nil, nil, cli.Exit(err.Error(), ExitFailure)
	}
	rt := &runtime{cfg: cfg, log: log, specs: specs, pool: pool, catalogPool: catalogPool, store: st, reporterHook: rs.build, reporters: rs, tracer: tracer, secrets: keys}
	cleanup := func() {
		closeReporters(rs.factory, log)
		closeDatabase()
		// The spans still buffered go out now, within a few seconds.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			log.Warn("could not export the last spans", "err", err)
		}
	}
	return rt, cleanup, nil
}

// migrateAll applies every pending migration.
func migrateAll(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool) error {
	if _, err := migrateDatabase(ctx, cfg, pool); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	return nil
}

// newEngine builds the engine (engine.New, the one composition root) from
// the configuration and the specs, with the program's builtin handlers and
// the catalog's bound to the engine's store and client (bindCatalog), and
// extra (remote runners) beside the local ones; errors exit 1. wf run runs
// it; wf serve and wf exec use its parts.
func (rt *runtime) newEngine(c *cli.Context, owner string, extra []runners.Runner) (*engine.Engine, error) {
	cfg, r := rt.cfg, rt.cfg.Retention
	session, err := sessionConfig(c.Context, cfg, rt.pool)
	if err != nil {
		return nil, cli.Exit(err.Error(), ExitFailure)
	}
	files, err := filesOpener(cfg)
	if err != nil {
		return nil, err
	}
	// The tile cache's superseded versions go on the leader, with the
	// other maintenance.
	pruner, err := tiles.NewPruner(tiles.PrunerConfig{Store: rt.store.Catalog(), CacheURL: cfg.Tiles.CacheURL,
		Interval: cfg.MaintenanceInterval, Grace: cfg.Tiles.CacheGrace, Logger: rt.log})
	if err != nil {
		return nil, cli.Exit(err.Error(), ExitFailure)
	}
	leading := []engine.Service{{Name: "tile cache pruner", Run: func(ctx context.Context) error { pruner.Run(ctx); return nil }}}
	if rt.store.CatalogApart() {
		// The catalog's events that their writers could not relay (see
		// catalog/outbox) reach the queue through the leader's sweep.
		sweeper, err := outbox.NewSweeper(outbox.SweeperConfig{Queue: rt.store, Logger: rt.log})
		if err != nil {
			return nil, cli.Exit(err.Error(), ExitFailure)
		}
		leading = append(leading, engine.Service{Name: "catalog outbox", Run: sweeper.Run})
	}
	eng, err := engine.New(engine.Config{
		Name: cfg.Name, Owner: owner, Pool: rt.pool, CatalogPool: rt.catalogPool, LeaderServices: leading, Secrets: rt.secrets, SessionConnConfig: session, Channels: storeChannels(cfg),
		Specs: rt.specs, Registry: builtinRegistry(c), Bind: bindCatalog(cfg, rt.log, files), Files: files, Runners: extra,
		DefaultVisibilityTimeout: cfg.VisibilityTimeout,
		Slots:                    cfg.Slots, Unfair: !cfg.Fairness.Enabled, NoEventConsumer: !cfg.Events.Consume, UnmatchedEventGrace: cfg.Events.UnmatchedGrace, TenantWeights: cfg.Fairness.TenantWeights(),
		PollInterval: cfg.PollInterval, HeartbeatInterval: cfg.HeartbeatInterval,
		JanitorInterval: cfg.JanitorInterval, Grace: cfg.Grace, PartitionsAhead: r.PartitionsAhead,
		MaintenanceInterval: cfg.MaintenanceInterval,
		Retention: maintenance.Retention{
			Completed: r.Completed, Failed: r.Failed, DeadLetter: r.DeadLetter, DeadLetterEvents: r.DeadLetterEvents,
		},
		Reporters: rt.reporterHook, Logger: rt.log, TracerProvider: rt.tracer,
		SpecSource: rt.specSource, OnReload: rt.onReload,
	})
	if err != nil {
		return nil, cli.Exit(err.Error(), ExitFailure)
	}
	return eng, nil
}
