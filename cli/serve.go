package cli

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/engine"
	"github.com/wfhq/wf/engine/readreplica"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/redact"
)

// serveCommand is `wf serve`: the HTTP API alone. It claims no tasks (an
// engine elsewhere runs them), except the SYNCHRONOUS ones its callers wait
// for, which it runs inline.
func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the HTTP API only (no task claiming) until SIGINT/SIGTERM",
		Description: "The API is also served by wf run. Without a database URL, wf serve uses the local\n" +
			"PostgreSQL in <data-dir>/pg. Tokens come from the configuration (tokens in wf.yaml, or WF_TOKENS).",
		Flags: []cli.Flag{
			configFlag("listen", "HTTP listen address `HOST:PORT` (default 127.0.0.1:8080)"),
			configFlag("specs", "comma-separated spec `PATHS` (default specs)"),
		},
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	if err := noArguments(c, "serve"); err != nil {
		return err
	}
	rt, cleanup, err := openRuntime(c, runtimeOptions{})
	if err != nil {
		return err
	}
	defer cleanup()
	// The engine is built, not run: the API uses its store, client,
	// metrics and synchronous runners.
	eng, err := rt.newEngine(c, "", nil)
	if err != nil {
		return err
	}
	ctx := c.Context
	h, err := startAPI(ctx, rt, eng)
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	// The dashboard lists this instance by its presence connection (wf
	// run's election connection does the same for engines).
	pctx, stopPresence := context.WithCancel(ctx)
	var presence sync.WaitGroup
	presence.Go(func() { _ = eng.HoldPresence(pctx) })
	defer presence.Wait()
	defer stopPresence()
	select {
	case <-ctx.Done():
	case err := <-h.done:
		h.done <- err // stop reads it
	}
	if err := h.stop(); err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
	return nil
}

// apiHandle is a running HTTP API.
type apiHandle struct {
	cancel context.CancelFunc
	done   chan error
	err    error
	once   sync.Once
	// srv is the server that listens; build makes one for a spec set
	// (reload).
	srv   *api.Server
	build func(*spec.Set) (*api.Server, error)
}

// reload makes the API answer with routes built for set (the engine's
// parts as they are after its Reload): POST /tasks knows the new task
// types, and so on. On error the old routes stay.
func (h *apiHandle) reload(set *spec.Set) error {
	next, err := h.build(set)
	if err != nil {
		return fmt.Errorf("error rebuilding the HTTP API for the reloaded specs: %w", err)
	}
	h.srv.UseRoutesOf(next)
	return nil
}

// stop shuts the server down gracefully (requests in flight finish within
// the grace period) and returns how serving ended.
func (h *apiHandle) stop() error {
	h.cancel()
	h.once.Do(func() { h.err = <-h.done })
	if h.err != nil {
		return fmt.Errorf("HTTP API: %w", h.err)
	}
	return nil
}

// startAPI listens on the configured address and serves the HTTP API over
// eng's parts (its store, client, metrics, rules and runners: the
// SYNCHRONOUS runs carry its owner id, and take room under
// concurrency.per_instance from its count, which its dispatcher shares) until ctx ends or stop is called. It
// fails at once when the address cannot be bound.
func startAPI(ctx context.Context, rt *runtime, eng *engine.Engine) (*apiHandle, error) {
	cfg := rt.cfg
	// Pub/Sub pushes of the catalogs' storage notifications reach
	// /hooks/gcs once the push service account is configured.
	var push *gcp.PushReceiver
	if cfg.GCP.PushServiceAccount != "" {
		var err error
		push, err = gcp.NewPushReceiver(ctx, gcp.PushConfig{
			Store: eng.Store(), Emitter: eng.Emitter(), Audience: cmp.Or(cfg.GCP.PushAudience, cfg.GCP.PushEndpoint),
			ServiceAccount: cfg.GCP.PushServiceAccount, Logger: rt.log,
		})
		if err != nil {
			return nil, err
		}
	}
	// Exports are fetched over HTTP from the tenants' folders.
	files, err := filesOpener(cfg)
	if err != nil {
		return nil, err
	}
	// Reads that may lag go to database.read_url while it keeps up.
	reads, closeReads, err := openReadReplica(ctx, rt, eng.Store())
	if err != nil {
		return nil, err
	}
	build := func(specs *spec.Set) (*api.Server, error) {
		return api.New(api.Config{
			Pool: rt.pool, CatalogPool: rt.catalogPool, Specs: specs, Store: eng.Store(), Client: eng.Client(), Emitter: eng.Emitter(), Workflows: eng.Workflows(),
			Tokens: cfg.Tokens, HTTP: cfg.HTTP, Owner: eng.Owner(), Runners: eng.Runners(), Rules: eng.Rules(), Unserved: eng.Unserved(), InstanceRuns: eng.InstanceRuns(),
			Metrics: eng.Metrics(), Logger: rt.log, Reporters: rt.reporterHook, TileCacheURL: cfg.Tiles.CacheURL,
			Folders:        redact.NewFolders(cfg.Files.LocalRoots, cfg.ServerFolders()),
			StoragePush:    push,
			Files:          files,
			ReportsURL:     cfg.Report.BucketURL,
			TracerProvider: rt.tracer,
			Reads:          reads,
		})
	}
	srv, err := build(rt.specs)
	if err != nil {
		closeReads()
		return nil, err
	}
	ln, err := api.Listen(cfg.Listen)
	if err != nil {
		closeReads()
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	h := &apiHandle{cancel: cancel, done: make(chan error, 1), srv: srv, build: build}
	if reads != nil {
		go func() { _ = reads.Run(sctx) }()
	}
	go func() {
		err := srv.Serve(sctx, ln, cfg.Grace)
		closeReads()
		h.done <- err
	}()
	return h, nil
}

// openReadReplica opens a pool on database.read_url and a monitor of its
// lag behind primary (readreplica), or returns nil when none is
// configured. The cleanup closes the pool.
func openReadReplica(ctx context.Context, rt *runtime, primary *store.Store) (*readreplica.Monitor, func(), error) {
	if rt.cfg.Database.ReadURL == "" {
		return nil, func() {}, nil
	}
	// A replica behind a transaction-mode pooler is read the same way as
	// the primary behind one.
	pool, err := connectPool(ctx, rt.cfg.Database.ReadURL, rt.cfg.Database.SessionURL != "")
	if err != nil {
		return nil, nil, fmt.Errorf("database.read_url: %w", err)
	}
	m, err := readreplica.New(readreplica.Config{Primary: primary, Replica: store.New(pool).WithChannels(primary.Channels()), Logger: rt.log})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return m, pool.Close, nil
}
