package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/api"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/runnerset"
	"github.com/wfhq/wf/engine/spec"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/reporters"
	"github.com/wfhq/wf/wftype"
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
	if c.NArg() > 0 {
		return Usagef("serve takes no arguments, got %q", c.Args().First())
	}
	rt, cleanup, err := openRuntime(c, runtimeOptions{})
	if err != nil {
		return err
	}
	defer cleanup()
	set, err := rt.buildRunners(c, nil)
	if err != nil {
		return err
	}
	ctx := c.Context
	metrics := newAPIMetrics(rt.cfg, rt.pool, rt.specs, rt.log)
	h, err := startAPI(ctx, apiOptions{cfg: rt.cfg, log: rt.log, pool: rt.pool, specs: rt.specs, set: set, metrics: metrics, reporters: rt.reporterHook})
	if err != nil {
		return cli.Exit(err.Error(), ExitFailure)
	}
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

// newAPIMetrics builds the metrics that the engine (as its observer) and
// the HTTP API share.
func newAPIMetrics(cfg *config.Config, pool *pgxpool.Pool, specs *spec.Set, log *slog.Logger) *api.Metrics {
	var types []string
	for _, tt := range specs.TaskTypes() {
		types = append(types, tt.Name())
	}
	return api.NewMetrics(api.MetricsConfig{
		Store: store.New(pool).WithChannels(storeChannels(cfg)), TaskTypes: types, Logger: log,
	})
}

// apiOptions is what startAPI needs.
type apiOptions struct {
	cfg     *config.Config
	log     *slog.Logger
	pool    *pgxpool.Pool
	specs   *spec.Set
	set     *runnerset.Set
	metrics *api.Metrics
	// owner is the engine's owner id, so synchronous runs carry it too.
	owner string
	// reporters builds the reporters of SYNCHRONOUS runs.
	reporters func(*wftype.Task) (reporters.Reporter, error)
}

// apiHandle is a running HTTP API.
type apiHandle struct {
	cancel context.CancelFunc
	done   chan error
	err    error
	once   sync.Once
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

// startAPI listens on cfg.Listen and serves the HTTP API until ctx ends or
// stop is called. It fails at once when the address cannot be bound.
func startAPI(ctx context.Context, o apiOptions) (*apiHandle, error) {
	srv, err := api.New(api.Config{
		Pool: o.pool, Specs: o.specs, Channels: storeChannels(o.cfg), Tokens: o.cfg.Tokens, HTTP: o.cfg.HTTP,
		Owner: o.owner, Runners: o.set.Runners, Rules: o.set.Rules, Metrics: o.metrics, Logger: o.log,
		Reporters: o.reporters,
	})
	if err != nil {
		return nil, err
	}
	ln, err := api.Listen(o.cfg.Listen)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	h := &apiHandle{cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- srv.Serve(sctx, ln, o.cfg.Grace) }()
	return h, nil
}
