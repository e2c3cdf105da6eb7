package cli

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/catalog/builtins"
	"github.com/wfhq/wf/catalog/gcp"
	"github.com/wfhq/wf/catalog/search"
	"github.com/wfhq/wf/catalog/webhooks"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/client"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/egress"
	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/runners/builtin"
)

// handlerNames lists every builtin handler a spec may name: the program's
// registry and the catalog's handlers (feature data and webhooks), which
// are bound to their dependencies only when a command runs tasks.
func handlerNames(c *cli.Context) []string {
	names := append(builtinRegistry(c).Names(), builtins.Names()...)
	names = append(names, webhooks.Names()...)
	names = append(names, gcp.Names()...)
	slices.Sort(names)
	return slices.Compact(names)
}

// bindCatalog returns the engine's Bind for the commands that run tasks
// (wf run, wf serve, wf exec): it registers the catalog's handlers bound to
// their dependencies — the engine's store, its client for the tasks they
// create, the files opener (files.local_roots, outbound.allow), the gcp
// section — so every process runs every handler the same way. A missing
// dependency is an error at start-up. A name the program's registry already holds keeps its
// handler (a program embedding wf may bring its own).
func bindCatalog(cfg *config.Config, log *slog.Logger, files *objio.Opener) func(*builtin.Registry, *store.Store, *client.Client) error {
	return func(reg *builtin.Registry, st *store.Store, cl *client.Client) error {
		// Outbound requests (http sources, webhook deliveries) reach only
		// public addresses and outbound.allow.
		outbound, err := egress.NewPolicy(cfg.Outbound.Allow)
		if err != nil {
			return err
		}
		// The events the builtins emit (ingestion.completed, asset.updated)
		// stay in the run's trace when the engine traces.
		em := events.NewEmitter(st)
		if cl.Traced() {
			em = em.WithTracing()
		}
		es := cfg.Elasticsearch
		features, err := builtins.New(builtins.Deps{Store: st, Objects: files, Logger: log, TileCacheURL: cfg.Tiles.CacheURL,
			// The cluster is the operator's, named in the configuration: it is
			// reached wherever it is, outside outbound.allow.
			Search: search.Settings{Addresses: es.Addresses, Username: es.Username, Password: es.Password, APIKey: es.APIKey,
				IndexTemplate: es.IndexTemplate, FlushBytes: es.FlushBytes, Workers: es.Workers,
				MaxRetries: cmp.Or(es.MaxRetries, -1)}, // 0 in the configuration: no retries
			Emitter: em, Warehouses: cfg.Warehouse.Connections})
		if err != nil {
			return err
		}
		hooks, err := webhooks.New(webhooks.Deps{Store: st, Client: cl, Logger: log, HTTP: outbound.Client(webhooks.DefaultRequestTimeout)})
		if err != nil {
			return err
		}
		cloud, err := gcp.New(gcp.Deps{Store: st, Settings: cfg.GCP, Logger: log})
		if err != nil {
			return err
		}
		// Names the program already registered keep their handlers.
		_ = features.Register(reg)
		_ = hooks.Register(reg)
		_ = cloud.Register(reg)
		return nil
	}
}

// filesOpener opens the files tasks name: local ones only inside
// files.local_roots (each tenant in its own folder there, see
// objio.Opener.Tenant), http(s) ones only at public addresses and
// outbound.allow. The engine's client checks file inputs with it when a
// task is created; the handlers open them with it when the task runs. A bad
// outbound.allow is an error that exits 1.
func filesOpener(cfg *config.Config) (*objio.Opener, error) {
	outbound, err := egress.NewPolicy(cfg.Outbound.Allow)
	if err != nil {
		return nil, cli.Exit(err.Error(), ExitFailure)
	}
	return objio.New(objio.Config{LocalRoots: cfg.Files.LocalRoots, RootsHint: "set files.local_roots", HTTPClient: outbound.Client(0)}), nil
}

// createFilesFolder creates <data_dir>/files, the default of
// files.local_roots, when it is one of the roots and is missing, so that
// files can be dropped there for ingestion and exports land there.
func createFilesFolder(cfg *config.Config) error {
	dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "files"))
	if err != nil || !slices.Contains(cfg.Files.LocalRoots, dir) {
		return nil
	}
	// The data folder itself must stay reachable by the local PostgreSQL's
	// user (another user when wf runs as root), so it is created first, open
	// to traversal; only the files folder is private.
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("error creating the data folder: %w", err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("error creating the files folder: %w", err)
	}
	return nil
}
